#!/usr/bin/env bash
# Reruns the experiments of docs/experiments.md (issue 6) under a bounded budget:
#   1  bottleneck curve: rnn:none, rnn:additive, rnn:general, transformer on WMT De->En
#      (../shared/data/wmt_deen; train on train.*, BLEU by source length on dev.*)
#   2  variants table on Multi30k En->De (test_2016_flickr): every RNN score function,
#      the Transformer with 1, 2, 4 and 8 heads
#   3  gradient flow: `qkv gradflow` on item 1's rnn:none / rnn:additive / transformer,
#      at initialisation and after training, on 500 dev pairs
#   4  parallelism: bench/run_encoder.sh (encoder forward + backward vs source length)
#   5  interpretability: `qkv attend` heatmaps of a few dev sentences (item 1's models)
# Usage:
#   scripts/run_experiments.sh [ITEM...]          (default: 1 2 3 4 5)
# Settings (environment):
#   BUILD=build/release     the release build (cmake --workflow --preset release)
#   OUT=runs/experiments    where everything goes (OUT/<item>/, OUT/timings.txt)
#   BUDGET1=20m             training budget per variant, item 1 (4 variants)
#   BUDGET2=8m              training budget per variant, item 2 (9 variants)
#   THREADS=2               worker threads of every command
#   MAX_SENTENCES=0         first N pairs of every corpus (0: all); e.g. 2000 for a smoke run
#   GRADFLOW_SENTENCES=500  pairs measured by item 3
# With the defaults: item 1 ~1.5 h, item 2 ~1.3 h, items 3-5 a few minutes each: about
# 3 hours on 2 cores. Longer budgets (BUDGET1=2h) change the absolute BLEU, not the
# procedure. Each command's wall time goes to OUT/timings.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD:-build/release}
out=${OUT:-runs/experiments}
budget1=${BUDGET1:-20m}
budget2=${BUDGET2:-8m}
threads=${THREADS:-2}
max_sentences=${MAX_SENTENCES:-0}
gradflow_sentences=${GRADFLOW_SENTENCES:-500}
qkv="$build/tools/qkv/qkv"
wmt=../shared/data/wmt_deen
m30k=data/multi30k
items=("$@")
[[ ${#items[@]} -gt 0 ]] || items=(1 2 3 4 5)

[[ -x $qkv ]] || { echo "no $qkv: run cmake --workflow --preset release first" >&2; exit 1; }
mkdir -p "$out"
timings="$out/timings.txt"

# Runs a command, logs it and its wall time to OUT/timings.txt.
timed() {
  local name=$1
  shift
  echo "== $name: $*" >&2
  local start=$SECONDS
  "$@"
  echo "$name	$((SECONDS - start)) s	$*" >> "$timings"
}

common=(--threads "$threads" --max-sentences "$max_sentences" --overwrite --report)

item1() {
  # De->En: the source is German. dev.* is the reported test set; no validation set, so
  # nothing is tuned on it (early stopping would be the only use the issue allows).
  timed item1 "$qkv" compare --train-sets "$wmt/train.de.gz" "$wmt/train.en.gz" \
    --test-sets "$wmt/dev.de.gz" "$wmt/dev.en.gz" \
    --variants rnn:none,rnn:additive,rnn:general,transformer \
    --after "$budget1" --out "$out/1-bottleneck" --title "Bottleneck: BLEU by source length (WMT De-En dev)" \
    "${common[@]}"
}

item2() {
  local v=(--train-sets "$m30k/train.en.gz" "$m30k/train.de.gz"
           --valid-sets "$m30k/val.en.gz" "$m30k/val.de.gz"
           --test-sets "$m30k/test_2016_flickr.en.gz" "$m30k/test_2016_flickr.de.gz"
           --after "$budget2" "${common[@]}")
  timed item2-rnn "$qkv" compare --variants rnn:dot,rnn:scaled-dot,rnn:cosine,rnn:general,rnn:additive \
    --out "$out/2-variants/rnn" --title "Score functions (Multi30k En-De)" "${v[@]}"
  # compare trains one Transformer per run; heads are a model flag, so one run per count.
  for heads in 1 2 4 8; do
    timed "item2-heads$heads" "$qkv" compare --variants transformer --heads "$heads" \
      --out "$out/2-variants/transformer-h$heads" --title "Transformer, $heads heads" "${v[@]}"
  done
  # TODO(issue 6, item 2): attention entropy per variant is not measured by compare yet.
}

item3() {
  local models=() m
  for m in rnn-none rnn-additive transformer; do
    [[ -d $out/1-bottleneck/models/$m ]] && models+=("$out/1-bottleneck/models/$m")
  done
  [[ ${#models[@]} -gt 0 ]] || { echo "item 3 needs item 1's models in $out/1-bottleneck" >&2; return 1; }
  mkdir -p "$out/3-gradflow"
  local g=(--src "$wmt/dev.de.gz" --ref "$wmt/dev.en.gz" --max-sentences "$gradflow_sentences"
           --threads "$threads")
  for site in input output; do
    # --init: the weights each model started from (qkv train's default --seed, 1111).
    timed "item3-init-$site" "$qkv" gradflow --model "${models[@]}" "${g[@]}" --site "$site" --init \
      --csv "$out/3-gradflow/init-$site.csv" --svg "$out/3-gradflow/init-$site.svg" \
      > "$out/3-gradflow/init-$site.txt"
    timed "item3-trained-$site" "$qkv" gradflow --model "${models[@]}" "${g[@]}" --site "$site" \
      --csv "$out/3-gradflow/trained-$site.csv" --svg "$out/3-gradflow/trained-$site.svg" \
      > "$out/3-gradflow/trained-$site.txt"
    # The same, on sentences of 30-50 tokens only: one length, so the curve's shape is not
    # a mixture of short and long sentences.
    timed "item3-trained-$site-30to50" "$qkv" gradflow --model "${models[@]}" "${g[@]}" \
      --site "$site" --min-length 30 --max-length 50 \
      --csv "$out/3-gradflow/trained-$site-30to50.csv" \
      > "$out/3-gradflow/trained-$site-30to50.txt"
  done
}

item4() {
  OUT="$out/4-encoder.txt" timed item4 bench/run_encoder.sh "$build"
}

item5() {
  local models=() m
  for m in rnn-additive rnn-general transformer; do
    [[ -d $out/1-bottleneck/models/$m ]] && models+=("$m")
  done
  [[ ${#models[@]} -gt 0 ]] || { echo "item 5 needs item 1's models in $out/1-bottleneck" >&2; return 1; }
  # A handful of dev sentences: the first five and the longest of the first 500.
  # TODO(issue 6, item 5): pick one sentence with reordering by hand and add it here.
  local src="$out/5-attention/sentences.de"
  mkdir -p "$out/5-attention"
  zcat "$wmt/dev.de.gz" | head -5 > "$src"
  zcat "$wmt/dev.de.gz" | head -500 | awk '{ print length, NR, $0 }' | sort -n -r | head -1 |
    cut -d' ' -f3- >> "$src"
  for m in "${models[@]}"; do
    timed "item5-$m" "$qkv" attend --model "$out/1-bottleneck/models/$m" --merge-subwords \
      --svg "$out/5-attention/$m" --layer all --head all --threads "$threads" \
      < "$src" > "$out/5-attention/$m.txt"
  done
}

for item in "${items[@]}"; do
  case $item in
    1 | 2 | 3 | 4 | 5) "item$item" ;;
    *) echo "unknown item '$item' (expected 1 2 3 4 5)" >&2; exit 2 ;;
  esac
done
echo "done; wall times in $timings" >&2

#!/usr/bin/env bash
# Reruns the experiments of docs/experiments.md (issue 6) under a bounded budget:
#   1  bottleneck curve: rnn:none, rnn:additive, rnn:general, transformer on WMT De->En
#      (../shared/data/wmt_deen; train on train.*, BLEU by source length on dev.*, with
#      bootstrap intervals)
#   2  variants table on Multi30k En->De (test_2016_flickr): rnn:none, every RNN score
#      function, the Transformer with 1, 2, 4 and 8 heads (BLEU, chrF, tokens/s,
#      parameters, attention entropy)
#   3  gradient flow: `qkv gradflow` on item 1's rnn:none / rnn:additive / transformer,
#      at initialisation and after training, on 500 dev pairs
#   4  parallelism: bench/run_encoder.sh (encoder forward + backward vs source length);
#      wants an otherwise idle machine, so it runs last
#   5  interpretability: `qkv attend` heatmaps and `qkv translate --alignment` word
#      alignments of chosen sentences (item 1's and item 2's models)
# Usage:
#   scripts/run_experiments.sh [ITEM...]          (default: 1 2 3 5 4)
# Items 1 and 2 run side by side (one thread each) when both are asked for: on 2 cores
# that halves the wall time. Budgets are update counts, so the models (and their BLEU)
# do not depend on how loaded the machine is; only the wall times and tokens/s do.
# Settings (environment):
#   BUILD=build/release     the release build (cmake --workflow --preset release)
#   OUT=runs/experiments    where everything goes (OUT/<item>/, OUT/timings.txt)
#   BUDGET1=2500u           training budget per variant, item 1 (4 variants, ~2.5 epochs)
#   BUDGET2=800u            training budget per variant, item 2 (10 variants, ~2 epochs)
#   THREADS=1               worker threads of every command (items 1 and 2 run together)
#   VOCAB1=8000 VOCAB2=4000 joint SentencePiece vocabulary sizes of items 1 and 2
#   MAX_SENTENCES=0         first N pairs of every corpus (0: all); e.g. 2000 for a smoke run
#   GRADFLOW_SENTENCES=500  pairs measured by item 3
#   EOS_SENTENCES=200       sentences item 5 measures the attention on </s> over
# With the defaults on 2 cores: items 1 and 2 side by side ~2 h (item 1's Transformer
# dominates), items 3, 5 and 4 a few minutes each. Each command's wall time goes to
# OUT/timings.txt. A smoke run (a few minutes):
#   MAX_SENTENCES=300 VOCAB1=500 VOCAB2=500 BUDGET1=20u BUDGET2=20u GRADFLOW_SENTENCES=50 \
#     EOS_SENTENCES=10 OUT=/tmp/smoke scripts/run_experiments.sh
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD:-build/release}
out=${OUT:-runs/experiments}
budget1=${BUDGET1:-2500u}
budget2=${BUDGET2:-800u}
threads=${THREADS:-1}
max_sentences=${MAX_SENTENCES:-0}
vocab1=${VOCAB1:-8000}
vocab2=${VOCAB2:-4000}
gradflow_sentences=${GRADFLOW_SENTENCES:-500}
eos_sentences=${EOS_SENTENCES:-200}
qkv="$build/tools/qkv/qkv"
wmt=../shared/data/wmt_deen
m30k=data/multi30k
items=("$@")
[[ ${#items[@]} -gt 0 ]] || items=(1 2 3 5 4)

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

# The models and training of every variant: small (128 wide) so that ~2 epochs fit in
# minutes per model on one core; no dropout and a constant learning rate, since so short
# a run underfits; no validation (nothing is tuned on the reported test sets).
model_flags=(--dim-emb 128 --dim-rnn 128 --dim-ffn 512 --heads 4 --mini-batch-words 2048
             --learn-rate 0.002 --lr-schedule constant --warmup 100 --dropout 0
             --disp-freq 100 --save-freq 0 --valid-freq 0)
common=(--threads "$threads" --max-sentences "$max_sentences" --report)

item1() {
  # De->En: the source is German. dev.* is the reported test set. --skip-invalid: 130
  # training lines hold C1 control characters (e.g. U+0084), skipped and counted.
  timed item1 "$qkv" compare --train-sets "$wmt/train.de.gz" "$wmt/train.en.gz" \
    --test-sets "$wmt/dev.de.gz" "$wmt/dev.en.gz" --skip-invalid --vocab-size "$vocab1" \
    --variants rnn:none,rnn:additive,rnn:general,transformer --after "$budget1" \
    --out "$out/1-bottleneck" --title "Bottleneck: BLEU by source length (WMT De-En dev)" \
    --overwrite "${model_flags[@]}" "${common[@]}" > "$out/1-bottleneck.txt"
}

item2() {
  timed item2 "$qkv" compare --train-sets "$m30k/train.en.gz" "$m30k/train.de.gz" \
    --test-sets "$m30k/test_2016_flickr.en.gz" "$m30k/test_2016_flickr.de.gz" \
    --vocab-size "$vocab2" --after "$budget2" \
    --variants rnn:none,rnn:dot,rnn:scaled-dot,rnn:cosine,rnn:general,rnn:additive,transformer:h1,transformer:h2,transformer:h4,transformer:h8 \
    --out "$out/2-variants" --title "Attention variants (Multi30k En-De, test_2016_flickr)" \
    --overwrite "${model_flags[@]}" "${common[@]}" > "$out/2-variants.txt"
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
  local site
  for site in input output; do
    # --init: the weights each model started from (qkv train's default --seed, 1111).
    timed "item3-init-$site" "$qkv" gradflow --model "${models[@]}" "${g[@]}" --site "$site" --init \
      --csv "$out/3-gradflow/init-$site.csv" --svg "$out/3-gradflow/init-$site.svg" \
      > "$out/3-gradflow/init-$site.txt"
    timed "item3-trained-$site" "$qkv" gradflow --model "${models[@]}" "${g[@]}" --site "$site" \
      --csv "$out/3-gradflow/trained-$site.csv" --svg "$out/3-gradflow/trained-$site.svg" \
      > "$out/3-gradflow/trained-$site.txt"
  done
  # One length band (30-50 tokens), so the curve is not a mixture of short and long
  # sentences: the first and last positions are the same distance apart in every one.
  local when
  for when in init trained; do
    local flag=()
    [[ $when == init ]] && flag=(--init)
    timed "item3-$when-input-30to50" "$qkv" gradflow --model "${models[@]}" "${g[@]}" "${flag[@]}" \
      --min-length 30 --max-length 50 --csv "$out/3-gradflow/$when-input-30to50.csv" \
      --svg "$out/3-gradflow/$when-input-30to50.svg" > "$out/3-gradflow/$when-input-30to50.txt"
  done
}

item4() {
  OUT="$out/4-encoder.txt" timed item4 bench/run_encoder.sh "$build"
}

# Item 5's sentences: fixed line numbers of the test sets (1-based), chosen for what
# they show (docs/experiments.md says why each).
# Multi30k test_2016_flickr (En->De): 1 a plain caption; 17 "holding hands" -> "hält ...
# Händchen" (a verb split around its object); 25 "while another man takes her picture" ->
# "während ein Mann sie fotografiert" (verb-final subordinate clause); 960 the longest
# (32 words).
m30k_lines=(1 17 25 960)
# WMT dev (De->En): 27 and 160 "hat ... gefordert/gefunden" -> "required/found" (the
# participle at the German clause end moves to second place in English); 256 "hat mir
# ebenfalls viel gegeben" -> "has also brought me a lot"; 445 a 61-word sentence whose
# English reorders whole clauses.
wmt_lines=(27 160 256 445)

pick_lines() {
  local file=$1
  shift
  local want
  want=$(printf '%s\n' "$@" | paste -sd,)
  zcat -f "$file" | awk -v want="$want" 'BEGIN { n = split(want, w, ","); for (i = 1; i <= n; ++i) keep[w[i]] = 1 } (NR in keep)'
}

item5() {
  local dir=$out/5-attention
  mkdir -p "$dir"
  pick_lines "$m30k/test_2016_flickr.en.gz" "${m30k_lines[@]}" > "$dir/m30k.en"
  pick_lines "$wmt/dev.de.gz" "${wmt_lines[@]}" > "$dir/wmt.de"
  local m
  for m in rnn-additive rnn-general transformer-h4 transformer-h8; do
    [[ -d $out/2-variants/models/$m ]] || continue
    timed "item5-m30k-$m" "$qkv" attend --model "$out/2-variants/models/$m" --merge-subwords \
      --svg "$dir/m30k-$m" --layer all --head all --threads "$threads" \
      < "$dir/m30k.en" > "$dir/m30k-$m.txt"
    "$qkv" translate --model "$out/2-variants/models/$m" --alignment hard --threads "$threads" \
      < "$dir/m30k.en" > "$dir/m30k-$m.align"
  done
  # Attention on the source </s> and its peak weight, per model and head.
  # (awk, not head: head would close the pipe early, and pipefail would stop the script)
  zcat -f "$m30k/test_2016_flickr.en.gz" | awk -v n="$eos_sentences" 'NR <= n' > "$dir/m30k200.en"
  zcat -f "$wmt/dev.de.gz" | awk -v n="$eos_sentences" 'NR <= n' > "$dir/wmt200.de"
  : > "$dir/eos-share.txt"
  for m in rnn-dot rnn-general rnn-additive; do
    [[ -d $out/2-variants/models/$m ]] &&
      scripts/attention_eos_share.py "$qkv" "$out/2-variants/models/$m" "$dir/m30k200.en" "$eos_sentences" >> "$dir/eos-share.txt"
  done
  for h in 4 8; do
    [[ -d $out/2-variants/models/transformer-h$h ]] &&
      scripts/attention_eos_share.py "$qkv" "$out/2-variants/models/transformer-h$h" "$dir/m30k200.en" "$eos_sentences" \
        --layers 3 --heads "$h" >> "$dir/eos-share.txt"
  done
  for m in rnn-general rnn-additive; do
    [[ -d $out/1-bottleneck/models/$m ]] &&
      scripts/attention_eos_share.py "$qkv" "$out/1-bottleneck/models/$m" "$dir/wmt200.de" "$eos_sentences" >> "$dir/eos-share.txt"
  done
  [[ -d $out/1-bottleneck/models/transformer ]] &&
    scripts/attention_eos_share.py "$qkv" "$out/1-bottleneck/models/transformer" "$dir/wmt200.de" "$eos_sentences" \
      --layers 3 --heads 4 >> "$dir/eos-share.txt"

  for m in rnn-additive rnn-general transformer; do
    [[ -d $out/1-bottleneck/models/$m ]] || continue
    timed "item5-wmt-$m" "$qkv" attend --model "$out/1-bottleneck/models/$m" --merge-subwords \
      --svg "$dir/wmt-$m" --layer all --head all --width 160 --max-length 300 --threads "$threads" \
      < "$dir/wmt.de" > "$dir/wmt-$m.txt"
    "$qkv" translate --model "$out/1-bottleneck/models/$m" --alignment hard --max-length 300 --threads "$threads" \
      < "$dir/wmt.de" > "$dir/wmt-$m.align"
  done
}

for item in "${items[@]}"; do
  case $item in
    1 | 2 | 3 | 4 | 5) ;;
    *) echo "unknown item '$item' (expected 1 2 3 4 5)" >&2; exit 2 ;;
  esac
done
want() { [[ " ${items[*]} " == *" $1 "* ]]; }
if want 1 && want 2; then
  item2 & pid2=$!
  item1
  wait "$pid2"
else
  want 1 && item1
  want 2 && item2
fi
for item in "${items[@]}"; do
  case $item in
    3 | 5) "item$item" ;;
  esac
done
want 4 && item4
echo "done; wall times in $timings" >&2

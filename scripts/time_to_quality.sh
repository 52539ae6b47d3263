#!/usr/bin/env bash
# Time to quality (issue 13, item 6): validation BLEU against training time for
# rnn:additive and the Transformer, side by side, one thread and one core each, so a user
# can read which model to train for a given CPU budget.
#
# Both models use `qkv train`'s defaults for their type (d 256; the Transformer 3+3 layers,
# FFN 1024, 4 heads, inv-sqrt schedule) on one joint SentencePiece vocabulary, validate
# every VALID_FREQ updates (greedy BLEU on the whole validation set, never the test set)
# and run until TRAIN_MINUTES of *training* time have passed: the trainer counts the time
# spent validating apart (validations.tsv's train_seconds), so the curve's x axis is what
# the same model would have cost without the measurements.
#
# Usage:
#   scripts/time_to_quality.sh [DATA_DIR]        (default: data/multi30k)
# DATA_DIR holds train.{en,de}.gz and val.{en,de}.gz (Multi30k's names); for WMT De-En
# pass SRC=de TGT=en and a directory with those names.
# Settings (environment):
#   BUILD=build/release   the release build
#   OUT=runs/time-to-quality/<data dir name>
#   TRAIN_MINUTES=60      training time per model (validation excluded)
#   VALID_FREQ=100        updates between validations
#   VOCAB=8000            joint vocabulary size
#   SRC=en TGT=de         language suffixes of the corpus files
#   SKIP_INVALID=0        1: skip (and count) lines the loaders reject (WMT's training
#                         files hold a few control characters) instead of stopping
# Afterwards OUT/chart.svg and OUT/summary.txt (scripts/time_to_quality_chart.py).
# Wants an otherwise idle 2-core machine: the two trainings take both cores.
set -euo pipefail
cd "$(dirname "$0")/.."
data=${1:-data/multi30k}
build=${BUILD:-build/release}
out=${OUT:-runs/time-to-quality/$(basename "$data")}
minutes=${TRAIN_MINUTES:-60}
valid_freq=${VALID_FREQ:-100}
vocab_size=${VOCAB:-8000}
src=${SRC:-en}
tgt=${TGT:-de}
skip=()
[[ ${SKIP_INVALID:-0} == 1 ]] && skip=(--skip-invalid)

[[ -x $build/tools/qkv/qkv ]] || { echo "no $build/tools/qkv/qkv: run cmake --workflow --preset release first" >&2; exit 1; }
for f in "train.$src.gz" "train.$tgt.gz" "val.$src.gz" "val.$tgt.gz"; do
  [[ -f $data/$f ]] || { echo "$data/$f is missing (DATA_DIR needs train and val files)" >&2; exit 1; }
done
mkdir -p "$out"
# A copy of the binary, so rebuilding the tree during the hour cannot touch the runs.
cp "$build/tools/qkv/qkv" "$out/qkv"
qkv=$out/qkv
train=("$data/train.$src.gz" "$data/train.$tgt.gz")
valid=("$data/val.$src.gz" "$data/val.$tgt.gz")

[[ -f $out/vocab.spm ]] || "$qkv" vocab --train-sets "${train[@]}" --vocab-size "$vocab_size" \
  --output "$out/vocab.spm" "${skip[@]}"

# The trainer stops on wall time, which includes validating: give it room, the chart
# cuts every curve at TRAIN_MINUTES of training time.
wall_minutes=$((minutes + minutes / 5 + 2))
run() {  # name core flags...
  local name=$1 core=$2
  shift 2
  rm -rf "${out:?}/$name"
  taskset -c "$core" "$qkv" train --model "$out/$name" --train-sets "${train[@]}" \
    --valid-sets "${valid[@]}" --vocab "$out/vocab.spm" --threads 1 \
    --after "${wall_minutes}m" --valid-freq "$valid_freq" --early-stopping 0 \
    --save-freq 1000 --disp-freq 100 --disp-seconds 0 "${skip[@]}" "$@" > "$out/$name.log" 2>&1
}
echo "$(date -u +%FT%TZ) training rnn:additive and transformer, ${minutes} min each ($out)"
run rnn-additive 0 --type rnn --attention additive &
rnn=$!
run transformer 1 --type transformer &
transformer=$!
status=0
wait "$rnn" || { echo "rnn:additive failed: see $out/rnn-additive.log" >&2; status=1; }
wait "$transformer" || { echo "transformer failed: see $out/transformer.log" >&2; status=1; }
[[ $status == 0 ]] || exit 1
echo "$(date -u +%FT%TZ) done"
/usr/bin/python3 scripts/time_to_quality_chart.py --minutes "$minutes" --out "$out" \
  "rnn:additive=$out/rnn-additive/validations.tsv" "transformer=$out/transformer/validations.tsv"

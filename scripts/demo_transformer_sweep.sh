#!/usr/bin/env bash
# How the demo's Transformer settings were chosen (issue 13, item 6): each candidate
# trains exactly as `qkv demo` trains its Transformer (Multi30k En->De, its 4000-piece
# vocabulary, the demo's per-model budget at 2 threads), then translates the VALIDATION
# set (val.*; the test set is never looked at) with the demo's beam 5, and BLEU ranks the
# candidates. A winner would replace the demo's settings in src/experiment/demo.cpp (the
# 2026-12-05 sweep kept them: docs/experiments.md, section 6).
#
# Usage:
#   scripts/demo_transformer_sweep.sh [CANDIDATE...]     (default: all below)
# Settings (environment):
#   BUILD=build/release   OUT=runs/demo-sweep
#   SECONDS_PER_MODEL=263 the demo's share per model at its default --minutes 15
#   THREADS=2
# Wants an otherwise idle machine: the budget is wall time. Results: OUT/results.tsv.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD:-build/release}
out=${OUT:-runs/demo-sweep}
budget=${SECONDS_PER_MODEL:-263}
threads=${THREADS:-2}
qkv=$build/tools/qkv/qkv
data=data/multi30k
[[ -x $qkv ]] || { echo "no $qkv: run cmake --workflow --preset release first" >&2; exit 1; }

# The demo's shared settings (src/experiment/demo.cpp) ...
base=(--type transformer --dim-emb 128 --dim-ffn 512 --heads 4 --dropout 0
  --mini-batch-words 2048 --learn-rate 0.002 --lr-schedule constant --warmup 100)
# ... and what each candidate changes (its flags replace the base's of the same name).
declare -A candidates=(
  [base]=""
  [lr3e-3]="--learn-rate 0.003"
  [lr1e-3]="--learn-rate 0.001"
  [batch4096]="--mini-batch-words 4096"
  [depth2]="--enc-depth 2 --dec-depth 2"
  [d256]="--dim-emb 256 --dim-ffn 1024"
  [invsqrt]="--lr-schedule inv-sqrt --learn-rate 0.003 --warmup 400"
)
names=("$@")
[[ ${#names[@]} -gt 0 ]] || names=(base lr3e-3 lr1e-3 batch4096 depth2 d256 invsqrt)

mkdir -p "$out"
[[ -f $out/vocab.spm ]] || "$qkv" vocab --train-sets "$data/train.en.gz" "$data/train.de.gz" \
  --vocab-size 4000 --output "$out/vocab.spm"
zcat "$data/val.en.gz" > "$out/val.en"
zcat "$data/val.de.gz" > "$out/val.de"
results=$out/results.tsv
[[ -f $results ]] || printf 'candidate\tflags\tupdates\tvalid_bleu\n' > "$results"
for name in "${names[@]}"; do
  [[ -v candidates[$name] ]] || { echo "unknown candidate $name" >&2; exit 1; }
  # shellcheck disable=SC2206  # the flags are words
  extra=(${candidates[$name]})
  flags=()  # the base without the flags the candidate sets (qkv refuses a flag twice)
  for ((i = 0; i < ${#base[@]}; i += 2)); do
    [[ " ${extra[*]} " == *" ${base[i]} "* ]] || flags+=("${base[i]}" "${base[i + 1]}")
  done
  [[ ${base[0]} == --type ]] || { echo "base flags must come in pairs" >&2; exit 1; }
  dir=$out/$name
  rm -rf "$dir"
  echo "$(date -u +%T) $name: ${extra[*]:-(the demo settings)}"
  "$qkv" train --model "$dir" --train-sets "$data/train.en.gz" "$data/train.de.gz" \
    --vocab "$out/vocab.spm" --threads "$threads" --after "${budget}s" --valid-freq 0 \
    --save-freq 0 --disp-freq 100 --disp-seconds 0 "${flags[@]}" "${extra[@]}" \
    > "$dir.log" 2>&1
  "$qkv" translate --model "$dir" --beam-size 5 --threads "$threads" < "$out/val.en" \
    > "$dir.val.hyp" 2>> "$dir.log"
  bleu=$("$qkv" eval --ref "$out/val.de" < "$dir.val.hyp" | sed -n 's/^BLEU[^=]*= *\([0-9.]*\).*/\1/p')
  updates=$(sed -n 's/.*up \([0-9]*\):.*/\1/p' "$dir.log" | tail -1)
  printf '%s\t%s\t%s\t%s\n' "$name" "${extra[*]:-}" "$updates" "$bleu" | tee -a "$results"
done

#!/usr/bin/env bash
# Model-file compatibility: the models in tests/compat/models were trained and decoded by
# an earlier release (commit 46da257, before the decoding driver and the model files moved
# into the library); today's `qkv` must load them and write byte-identical output for the
# same commands: greedy and beam translations, n-best lists with scores, hard and soft
# alignments, forced-decoding scores and the token attention heatmap.
#
#   compat.sh check    --qkv PATH [--fixtures DIR]   run each case, diff with DIR/expected
#   compat.sh generate --qkv PATH [--fixtures DIR]   train the tiny models and record the
#                                                    expected outputs (only with the old
#                                                    release: the point is to freeze them)
# Output is bitwise identical across thread counts (DESIGN.md); --threads 1 also keeps the
# run small. Needs bash 4+, coreutils, gzip and diff.
set -u -o pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
MODE=${1:-} QKV="" FIXTURES=$here
shift || true
while (($#)); do
  case $1 in
    --qkv) QKV=${2:-}; shift 2 ;;
    --fixtures) FIXTURES=${2:-}; shift 2 ;;
    *) echo "usage: compat.sh check|generate --qkv PATH [--fixtures DIR]" >&2; exit 2 ;;
  esac
done
[[ $MODE == check || $MODE == generate ]] || { echo "compat.sh: mode check|generate" >&2; exit 2; }
[[ -x $QKV ]] || { echo "compat.sh: --qkv '$QKV' is not an executable" >&2; exit 2; }
MODELS=$FIXTURES/models EXPECTED=$FIXTURES/expected INPUT=$FIXTURES/input.en
DATA=$here/../../data/multi30k

# The tiny models: 600 updates on 300 pairs, a 160-piece vocabulary; each directory
# holds model.safetensors and vocab.spm only (the training state is not needed).
generate_models() {
  local work
  work=$(mktemp -d "${TMPDIR:-/tmp}/qkv_compat.XXXXXX") || return 1
  zcat "$DATA/train.en.gz" | head -300 >"$work/train.en"
  zcat "$DATA/train.de.gz" | head -300 >"$work/train.de"
  "$QKV" vocab --train-sets "$work/train.en" "$work/train.de" --vocab-size 160 \
    --output "$work/vocab.spm" || return 1
  local common=(--train-sets "$work/train.en" "$work/train.de" --vocab "$work/vocab.spm"
    --mini-batch-words 256 --max-length 60 --valid-freq 0 --save-freq 0 --disp-freq 0
    --warmup 50 --learn-rate 3e-3 --after 600u --threads 1 --seed 7)
  rm -rf "$MODELS" && mkdir -p "$MODELS"
  "$QKV" train "${common[@]}" --model "$work/rnn-additive" --type rnn --attention additive \
    --dim-emb 24 --dim-rnn 24 || return 1
  "$QKV" train "${common[@]}" --model "$work/transformer" --type transformer --dim-emb 32 \
    --heads 2 --dim-ffn 64 --enc-depth 1 --dec-depth 2 || return 1
  local m
  for m in rnn-additive transformer; do
    mkdir -p "$MODELS/$m"
    cp "$work/$m/model.safetensors" "$work/$m/vocab.spm" "$MODELS/$m/"
  done
  # Test sentences, one blank line among them (it must give an empty output line).
  { zcat "$DATA/test_2016_flickr.en.gz" | head -4; echo; zcat "$DATA/test_2016_flickr.en.gz" |
    sed -n 5,8p; } >"$INPUT"
  rm -rf "$work"
}

# case NAME COMMAND...: runs `qkv COMMAND...` with the test input on stdin.
CASES=()
add_case() { CASES+=("$*"); }
for m in rnn-additive transformer; do
  add_case "$m.greedy" translate --model MODELS/$m --beam-size 1 --threads 1
  add_case "$m.beam4" translate --model MODELS/$m --beam-size 4 --threads 1
  add_case "$m.nbest3" translate --model MODELS/$m --beam-size 4 --n-best 3 --threads 1
  add_case "$m.hard" translate --model MODELS/$m --beam-size 3 --alignment hard --threads 1
  add_case "$m.soft" translate --model MODELS/$m --beam-size 1 --alignment soft --threads 1
  # --pieces: the expected heatmaps are of pieces, what attend showed by default when they
  # were made (it merges words by default since issue 18); the weights must not change.
  add_case "$m.attend" attend --model MODELS/$m --beam-size 2 --width 0 --threads 1 --pieces
done
add_case "transformer.hard-layer0-head1" translate --model MODELS/transformer --beam-size 2 \
  --alignment hard --alignment-layer 0 --alignment-head 1 --threads 1

# The stdin of a case: the input lines, or for `score` the source ||| its greedy output.
run_case() {
  local name=$1 cmd
  shift
  cmd=("${@//MODELS/$MODELS}")
  "$QKV" "${cmd[@]}" <"$INPUT" 2>/dev/null
}

run_score_case() {
  local m=$1
  paste -d '\t' "$INPUT" "$EXPECTED/$m.greedy" | sed 's/\t/ ||| /' |
    "$QKV" score --model "$MODELS/$m" --threads 1 2>/dev/null
}

if [[ $MODE == generate ]]; then
  generate_models || { echo "compat.sh: training the models failed" >&2; exit 1; }
  rm -rf "$EXPECTED" && mkdir -p "$EXPECTED"
fi
# same_but_rounding GOT EXPECTED: the same lines and words, numbers allowed to differ by a
# few units in their sixth significant digit. The expected outputs come from an optimised
# build; command 2 tests an -O1 + ASan build, where GCC contracts a*b+c into FMAs in other
# places, so a printed score can differ in its last digit (-7.675164 vs -7.675165). Words
# (the translations, alignment pairs, token strings) must still be identical.
same_but_rounding() {
  awk -v expected="$2" '
    function numeric(w) { return w ~ /^-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?$/ }
    function abs(x) { return x < 0 ? -x : x }
    {
      if ((getline want < expected) <= 0) exit 1
      n = split($0, a, /[ \t]+/); m = split(want, b, /[ \t]+/)
      if (n != m) exit 1
      for (i = 1; i <= n; i++) {
        if (a[i] == b[i]) continue
        if (!numeric(a[i]) || !numeric(b[i])) exit 1
        if (abs(a[i] - b[i]) > 5e-6 * (abs(b[i]) > 1 ? abs(b[i]) : 1)) exit 1
      }
    }
    END { if ((getline want < expected) > 0) exit 1 }' "$1"
}

FAILURES=0
ROUNDED=0
check_output() {  # NAME: compares (or records) the output on stdin
  local name=$1 got
  got=$(cat; echo x)
  if [[ $MODE == generate ]]; then
    printf '%s' "${got%x}" >"$EXPECTED/$name"
  elif diff <(printf '%s' "${got%x}") "$EXPECTED/$name" >/dev/null; then
    :
  elif same_but_rounding <(printf '%s' "${got%x}") "$EXPECTED/$name"; then
    echo "compat.sh: $name: the same words, numbers equal up to their last printed digit" >&2
    ROUNDED=$((ROUNDED + 1))
  else
    echo "compat.sh: FAIL: $name differs from $EXPECTED/$name:" >&2
    diff <(printf '%s' "${got%x}") "$EXPECTED/$name" | head -20 >&2
    FAILURES=$((FAILURES + 1))
  fi
}
for c in "${CASES[@]}"; do
  read -r -a words <<<"$c"
  # Process substitution, not a pipe: check_output must count failures in this shell.
  check_output "${words[0]}" < <(run_case "${words[@]}")
done
for m in rnn-additive transformer; do
  check_output "$m.score" < <(run_score_case "$m")
done
((FAILURES == 0)) || { echo "compat.sh: $FAILURES case(s) failed" >&2; exit 1; }
echo "compat.sh: $MODE: ${#CASES[@]} + 2 cases ok ($ROUNDED of them equal up to rounding)"

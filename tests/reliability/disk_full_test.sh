#!/usr/bin/env bash
# Disk full under `qkv train`: a resumed run is made to fail with ENOSPC at its 1st, 2nd,
# ... low-level write step (QKV_TEST_FAIL_NTH_WRITE; the steps are those of train.yml and
# then of every checkpoint: create, write, fsync, close, rename, open and fsync of the
# directory, for train_state.safetensors and then model.safetensors) until a run gets
# through. Every failing run must exit with status 1 and one error line that names the
# file and "No space left on device" (and, for a checkpoint, that the last checkpoint is
# intact and to rerun with --resume); afterwards every file of the model directory must
# load and no temporary file may be left.
#
# usage: disk_full_test.sh --qkv PATH [--work DIR] [--keep]
set -u -o pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tests/reliability/lib.sh
source "$here/lib.sh"

QKV="" WORK="" KEEP=0
while (($#)); do
  case $1 in
    --qkv) QKV=${2:-}; shift 2 ;;
    --work) WORK=${2:-}; shift 2 ;;
    --keep) KEEP=1; shift ;;
    *) echo "usage: disk_full_test.sh --qkv PATH [--work DIR] [--keep]" >&2; exit 2 ;;
  esac
done
[[ -x $QKV ]] || { echo "disk_full_test.sh: --qkv '$QKV' is not an executable" >&2; exit 2; }
if [[ -z $WORK ]]; then
  WORK=$(mktemp -d "${TMPDIR:-/tmp}/qkv_disk_full_test.XXXXXX")
else
  rm -rf "$WORK" && mkdir -p "$WORK"
fi
((KEEP)) || trap 'rm -rf "$WORK"' EXIT
DATA=$WORK/data RUN=$WORK/run SAVED=$WORK/saved
FAILURES=0
fail() { echo "disk_full_test.sh: FAIL: $*" >&2; FAILURES=$((FAILURES + 1)); }

prepare_tiny_task "$QKV" "$DATA" 100 || exit 1
tiny_train_flags "$DATA" 2
"$QKV" train "${TRAIN_FLAGS[@]}" --model "$RUN" 2>"$WORK/first.log" || {
  cat "$WORK/first.log" >&2
  exit 1
}
cp -a "$RUN" "$SAVED"
tiny_train_flags "$DATA" 3  # one more update, then its checkpoint (twice: --save-freq and the end)

steps=0 checkpoint_errors=0 whole=0
for ((n = 1; n <= 1000; ++n)); do
  QKV_TEST_FAIL_NTH_WRITE=$n "$QKV" train "${TRAIN_FLAGS[@]}" --model "$RUN" --resume \
    2>"$WORK/err.log"
  rc=$?
  ((rc == 0)) && { steps=$((n - 1)); break; }
  error=$(grep '^qkv train: error: ' "$WORK/err.log")
  ((rc == 1)) || fail "step $n: exit status $rc, not 1"
  [[ $(grep -c '^qkv train: error: ' "$WORK/err.log") == 1 ]] || fail "step $n: not one error line"
  [[ $error == *"No space left on device"* ]] || fail "step $n: the error lacks the reason: $error"
  if [[ $error == *"$RUN/train_state.safetensors'"* || $error == *"$RUN/model.safetensors'"* ]]; then
    checkpoint_errors=$((checkpoint_errors + 1))
    [[ $error == *"the last checkpoint in $RUN is intact"*"rerun with --resume"* ]] ||
      fail "step $n: the error does not say the checkpoint is intact and to rerun with --resume: $error"
  elif [[ $error != *"$RUN/train.yml'"* ]]; then
    fail "step $n: the error names no file of $RUN: $error"
  fi
  ok=1
  leftovers=$(find "$RUN" -name '*.tmp.*')
  [[ -z $leftovers ]] || { fail "step $n left temporary files: $leftovers"; ok=0; }
  loads_model "$QKV" "$RUN" "$DATA" || { fail "step $n: model.safetensors does not load"; ok=0; }
  # The train state loads: resuming with the budget already reached trains nothing.
  tiny_train_flags "$DATA" 2
  "$QKV" train "${TRAIN_FLAGS[@]}" --model "$RUN" --resume 2>"$WORK/check.log" ||
    { fail "step $n: train_state.safetensors does not resume: $(tail -n 1 "$WORK/check.log")"; ok=0; }
  tiny_train_flags "$DATA" 3
  whole=$((whole + ok))
  rm -rf "$RUN" && cp -a "$SAVED" "$RUN"
done
((steps > 0)) || fail "no run got through within 1000 failing steps"

cat <<EOF
disk-full test: qkv train --resume with ENOSPC at each of its $steps write steps
  exit status 1 with one error line naming the file and the reason: checked at every step
  checkpoint write steps whose error says the checkpoint is intact and to rerun with --resume: $checkpoint_errors
  model directory whole afterwards (model loads, train state resumes, no temporary file): $whole/$steps
EOF
if ((FAILURES > 0)); then
  echo "disk-full test: FAILED ($FAILURES)"
  exit 1
fi
echo "disk-full test: passed"

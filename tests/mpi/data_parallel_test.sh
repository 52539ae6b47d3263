#!/usr/bin/env bash
# Data-parallel training through mpirun (Open MPI), on the reliability suite's tiny task:
#   1. R = 1, 2, 3 ranks x N micro-batches give bitwise the model.safetensors (and the
#      progress lines' losses) of one process with --accumulate R*N: an RNN and a
#      Transformer, both with dropout;
#   2. a run of 2 ranks resumed with 3 (the same global batch) is bit-exact;
#   3. SIGKILL to rank 1 mid-training ends the job within seconds with Open MPI's message
#      naming the rank; the last checkpoint loads and resumes to the uninterrupted result;
#   4. ranks with different flags, vocabularies or corpora are refused at start-up naming
#      what differs; --data-parallel off under mpirun with 2 ranks is refused.
#
# usage: data_parallel_test.sh --qkv PATH [--work DIR] [--keep]
# Exits 0 when every check holds, 1 otherwise, 2 on a usage error.
set -u -o pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tests/reliability/lib.sh
source "$here/../reliability/lib.sh"

QKV="" WORK="" KEEP=0
while (($#)); do
  case $1 in
    --qkv) QKV=${2:-}; shift 2 ;;
    --work) WORK=${2:-}; shift 2 ;;
    --keep) KEEP=1; shift ;;
    *) echo "data_parallel_test.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
[[ -x $QKV ]] || { echo "data_parallel_test.sh: --qkv '$QKV' is not an executable" >&2; exit 2; }
command -v mpirun >/dev/null || { echo "data_parallel_test.sh: no mpirun (openmpi-bin)" >&2; exit 2; }
if [[ -z $WORK ]]; then
  WORK=$(mktemp -d "${TMPDIR:-/tmp}/qkv_mpi_test.XXXXXX")
else
  rm -rf "$WORK" && mkdir -p "$WORK"
fi
MPIRUN_PID=""
cleanup() {
  if [[ -n $MPIRUN_PID ]] && ((MPIRUN_PID > 0)); then kill -9 "$MPIRUN_PID" 2>/dev/null; fi
  ((KEEP)) || rm -rf "$WORK"
}
trap cleanup EXIT

# Loopback TCP between the ranks (no shared-memory transport: containers often lack the
# /dev/shm room or the ptrace rights it needs); root only because CI runs as root.
export OMPI_MCA_btl=self,tcp OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo
MPIRUN=(mpirun --oversubscribe)
(($(id -u) == 0)) && MPIRUN+=(--allow-run-as-root)
# Every launch is bounded in time: a hang fails the test instead of the CI job.
mpi() { timeout -k 5 60 "${MPIRUN[@]}" "$@"; }

FAILURES=0
fail() { echo "data_parallel_test.sh: FAIL: $*" >&2; FAILURES=$((FAILURES + 1)); }
DATA=$WORK/data
prepare_tiny_task "$QKV" "$DATA" 160 || { echo "cannot build the vocabulary" >&2; exit 1; }
# The reliability suite's tiny single-threaded RNN, with dropout; no budget or frequencies.
COMMON=(--train-sets "$DATA/train.src" "$DATA/train.tgt" --mini-batch-words 64 --max-length 20
  --valid-freq 0 --threads 1 --seed 7 --dropout 0.1)
RNN=(--type rnn --dim-emb 16 --dim-rnn 16)
BASE=("${COMMON[@]}" --vocab "$DATA/vocab.spm" "${RNN[@]}" --disp-freq 1 --save-freq 2 --after 4u)
TRANSFORMER=(--type transformer --dim-emb 16 --heads 2 --dim-ffn 32 --enc-depth 1 --dec-depth 1)
# losses LOG: the loss column of the progress lines.
losses() { grep -o 'loss [0-9.na/]*' "$1"; }

# 1. R ranks x N == 1 process x R*N.
for model in rnn transformer; do
  extra=()
  # A flag given twice is an error: the transformer's flags replace the RNN's.
  base=("${BASE[@]}")
  if [[ $model == transformer ]]; then
    base=("${COMMON[@]}" --vocab "$DATA/vocab.spm" --disp-freq 1 --save-freq 2 --after 4u)
    extra=("${TRANSFORMER[@]}")
  fi
  ref=$WORK/$model.ref
  "$QKV" train --model "$ref" "${base[@]}" "${extra[@]}" --accumulate 6 2>"$ref.log" ||
    { fail "$model: the single-process run failed"; cat "$ref.log" >&2; continue; }
  # The exchange overlaps the backward pass by default; 2x3:off after it.
  for rn in 1x6 2x3 3x2 2x3:off; do
    overlap=on
    [[ $rn == *:off ]] && overlap=off rn=${rn%:off}
    r=${rn%x*} n=${rn#*x} dir=$WORK/$model.$rn.$overlap
    # 100-float messages: even these tiny models' gradients travel in many chunks.
    if ! QKV_TEST_EXCHANGE_CHUNK=100 mpi -n "$r" -x QKV_TEST_EXCHANGE_CHUNK "$QKV" train --model "$dir" "${base[@]}" "${extra[@]}" --accumulate "$n" \
      --data-parallel mpi --exchange-overlap "$overlap" 2>"$dir.log" &&
      ! ompi_exit_race "$dir.log"; then
      fail "$model: $r ranks x $n failed"
      tail -20 "$dir.log" >&2
      continue
    fi
    cmp -s "$ref/model.safetensors" "$dir/model.safetensors" ||
      fail "$model: $r ranks x $n micro-batches (overlap $overlap) differ from 1 process x 6"
    [[ $(losses "$ref.log") == "$(losses "$dir.log")" ]] ||
      fail "$model: the losses of $r ranks x $n (overlap $overlap) differ from 1 process x 6"
  done
  # MPI_Iallreduce per chunk as the backward pass completes them: not bitwise across R,
  # but it must train: the first update's loss (before any exchange) is the same.
  ar=$WORK/$model.allreduce
  if QKV_TEST_EXCHANGE_CHUNK=100 mpi -n 3 -x QKV_TEST_EXCHANGE_CHUNK "$QKV" train --model "$ar" "${base[@]}" "${extra[@]}" --accumulate 2 \
    --data-parallel mpi --gradient-exchange allreduce 2>"$ar.log" || ompi_exit_race "$ar.log"; then
    [[ $(losses "$ref.log" | head -1) == "$(losses "$ar.log" | head -1)" ]] ||
      fail "$model: allreduce's first loss differs from 1 process x 6"
    [[ $(losses "$ar.log" | wc -l) == "$(losses "$ref.log" | wc -l)" ]] ||
      fail "$model: allreduce did not print a loss for every update"
  else
    fail "$model: 3 ranks with --gradient-exchange allreduce failed"
    tail -20 "$ar.log" >&2
  fi
done
[[ -n $(losses "$WORK/rnn.ref.log") ]] || fail "no progress line to compare"
grep -q 'update: 3 rank(s) x 2 micro-batch(es)' "$WORK/rnn.3x2.on.log" ||
  fail "the start-up report does not say how the update is split"

# 2. Stop after 2 updates with 2 ranks, resume to 4 with 3 ranks: the 1 x 6 result.
res=$WORK/resume
HALF=("${COMMON[@]}" --vocab "$DATA/vocab.spm" "${RNN[@]}" --disp-freq 1 --save-freq 2)
mpi -n 2 "$QKV" train --model "$res" "${HALF[@]}" --accumulate 3 --after 2u 2>"$res.1.log" ||
  ompi_exit_race "$res.1.log" || fail "resume: the first half failed"
mpi -n 3 "$QKV" train --model "$res" "${HALF[@]}" --after 4u --accumulate 2 --resume \
  2>"$res.2.log" || ompi_exit_race "$res.2.log" ||
  { fail "resume: the second half (3 ranks) failed"; tail -20 "$res.2.log" >&2; }
grep -q 'resumed at update 2' "$res.2.log" || fail "resume: not resumed at update 2"
cmp -s "$WORK/rnn.ref/model.safetensors" "$res/model.safetensors" ||
  fail "2 ranks resumed with 3 differ from an uninterrupted run"

# 3. SIGKILL to rank 1 mid-training.
KILL=("${COMMON[@]}" --vocab "$DATA/vocab.spm" "${RNN[@]}" --save-freq 1 --disp-freq 1)
kill_dir=$WORK/kill
mpi -n 2 "$QKV" train --model "$kill_dir" "${KILL[@]}" --after 400u 2>"$kill_dir.log" &
MPIRUN_PID=$!
victim=""
for ((i = 0; i < 300; ++i)); do  # up to 30 s for 5 updates to pass
  if grep -q '^ep 1 up 5:' "$kill_dir.log" 2>/dev/null; then
    victim=$(rank_pid "$MPIRUN_PID" 1)
    break
  fi
  sleep 0.1
done
if [[ -z $victim ]] || ((victim <= 0)); then
  fail "kill: rank 1 not found running"
else
  kill -9 "$victim"
  killed_ms=$(now_ms)
  wait "$MPIRUN_PID"
  rc=$?
  MPIRUN_PID=""
  elapsed=$(($(now_ms) - killed_ms))
  ((rc != 0)) || fail "kill: mpirun exited 0 after rank 1 was killed"
  ((elapsed < 15000)) || fail "kill: the job took ${elapsed} ms to end after rank 1 died"
  grep -q 'rank 1' "$kill_dir.log" || fail "kill: the message does not name rank 1"
  echo "kill: rank 1 (pid $victim) killed; mpirun ended in ${elapsed} ms with exit $rc"
  loads_model "$QKV" "$kill_dir" "$DATA" || fail "kill: the checkpoint left does not load"
  # The budget of the resumed run: a few updates past the checkpoint the kill left (on a
  # loaded machine the run may get well past update 5 before the kill lands).
  saved=$(grep -ao '"update":"[0-9]*"' "$kill_dir/train_state.safetensors" | head -1 | tr -dc 0-9)
  budget=$((${saved:-0} + 4))
  mpi -n 2 "$QKV" train --model "$kill_dir" "${KILL[@]}" --after "${budget}u" --resume \
    2>"$kill_dir.resume.log" || ompi_exit_race "$kill_dir.resume.log" || fail "kill: the resume failed"
  grep -q "resumed at update $saved" "$kill_dir.resume.log" || fail "kill: not resumed at $saved"
  "$QKV" train --model "$WORK/kill.ref" "${KILL[@]}" --after "${budget}u" --accumulate 2 \
    2>/dev/null || fail "kill: the reference run failed"
  cmp -s "$WORK/kill.ref/model.safetensors" "$kill_dir/model.safetensors" ||
    fail "kill: killed and resumed differs from an uninterrupted run"
fi

# 4. Mismatched ranks are refused, naming what differs.
SHORT=("${COMMON[@]}" "${RNN[@]}" --after 2u)
mpi -n 1 "$QKV" train --model "$WORK/mm1" "${SHORT[@]}" --vocab "$DATA/vocab.spm" : \
  -n 1 "$QKV" train --model "$WORK/mm1" "${SHORT[@]}" --vocab "$DATA/vocab.spm" --disp-freq 3 \
  >"$WORK/mm1.log" 2>&1 && fail "mismatch: different flags were accepted"
grep -q 'the flags (all but --threads) of rank 1 differs from rank 0' "$WORK/mm1.log" ||
  { fail "mismatch: the flags message is missing"; tail -20 "$WORK/mm1.log" >&2; }
"$QKV" vocab --train-sets "$DATA/train.src" "$DATA/train.tgt" --vocab-size 40 \
  -o "$WORK/other.spm" 2>/dev/null
mpi -n 1 "$QKV" train --model "$WORK/mm2" "${SHORT[@]}" --vocab "$DATA/vocab.spm" : \
  -n 1 "$QKV" train --model "$WORK/mm2" "${SHORT[@]}" --vocab "$WORK/other.spm" \
  >"$WORK/mm2.log" 2>&1 && fail "mismatch: different vocabularies were accepted"
grep -q 'the vocabulary of rank 1 differs from rank 0' "$WORK/mm2.log" ||
  { fail "mismatch: the vocabulary message is missing"; tail -20 "$WORK/mm2.log" >&2; }
mkdir -p "$WORK/edited"
sed '5s/.*/red dog/' "$DATA/train.src" >"$WORK/edited/train.src"
cp "$DATA/train.tgt" "$WORK/edited/train.tgt"
EDITED=(--train-sets "$WORK/edited/train.src" "$WORK/edited/train.tgt" --mini-batch-words 64
  --max-length 20 --valid-freq 0 --threads 1 --seed 7 --dropout 0.1 "${RNN[@]}" --after 2u)
mpi -n 1 "$QKV" train --model "$WORK/mm3" "${SHORT[@]}" --vocab "$DATA/vocab.spm" : \
  -n 1 "$QKV" train --model "$WORK/mm3" "${EDITED[@]}" --vocab "$DATA/vocab.spm" \
  >"$WORK/mm3.log" 2>&1 && fail "mismatch: different corpora were accepted"
grep -q 'the training corpus (its kept pairs, --max-length, --mini-batch-words) of rank 1 differs' \
  "$WORK/mm3.log" || { fail "mismatch: the corpus message is missing"; tail -20 "$WORK/mm3.log" >&2; }
# --threads is a node's own choice (results do not depend on it): accepted.
mpi -n 1 "$QKV" train --model "$WORK/threads" "${SHORT[@]}" --vocab "$DATA/vocab.spm" : \
  -n 1 "$QKV" train --model "$WORK/threads" "${COMMON[@]:0:3}" --mini-batch-words 64 \
  --max-length 20 --valid-freq 0 --threads 2 --seed 7 --dropout 0.1 "${RNN[@]}" --after 2u \
  --vocab "$DATA/vocab.spm" >"$WORK/threads.log" 2>&1 || ompi_exit_race "$WORK/threads.log" ||
  { fail "ranks with different --threads were refused"; tail -5 "$WORK/threads.log" >&2; }
mpi -n 2 "$QKV" train --model "$WORK/off" "${SHORT[@]}" --vocab "$DATA/vocab.spm" --data-parallel off \
  >"$WORK/off.log" 2>&1 && fail "--data-parallel off under mpirun -n 2 was accepted"
grep -q 'mpirun started 2 ranks but --data-parallel is off' "$WORK/off.log" ||
  fail "--data-parallel off: the message is missing"

if ((FAILURES > 0)); then
  echo "data_parallel_test.sh: $FAILURES failure(s); work dir $WORK" >&2
  KEEP=1
  exit 1
fi
echo "data_parallel_test.sh: all checks passed"

#!/usr/bin/env bash
# Kill test: `qkv train` killed with SIGKILL at K moments, half of them or more while a
# checkpoint file is being written, and resumed with --resume after every kill, must
#   - resume every time (a resume that fails is a failure),
#   - never leave a checkpoint that does not load (model.safetensors is loaded by
#     `qkv score` after every kill; train_state.safetensors by the next resume),
#   - end with a model.safetensors byte-identical to an uninterrupted run's (resume is
#     bit-exact and the file's metadata holds nothing run-specific).
#
# Where a kill lands: launches that aim at a save run with QKV_TEST_SAVE_DELAY_MS (every
# atomic save pauses that long between its complete temporary file and the rename); the
# script waits for a temporary checkpoint file of that process to appear, then kills at a
# random point of the pause. The other launches run without the pause and are killed at a
# random moment after they resumed. A kill counts as "during a checkpoint write" when the
# killed process's temporary checkpoint file is still there afterwards (it died between
# creating it and renaming it), whatever the launch aimed at.
#
# With --ranks R > 1 every launch is `mpirun -n R qkv train` (data-parallel): a kill aimed
# at a save hits rank 0 (the writer) inside it, the others hit a random rank, and the job
# must end (Open MPI ends the other ranks) and resume like a single process.
#
# usage: kill_test.sh --qkv PATH [--kills 50] [--updates U] [--delay-ms 250] [--seed 1]
#                     [--ranks 1] [--work DIR] [--keep]
# Prints the figures; exits 0 when every check holds, 1 otherwise, 2 on a usage error.
set -u -o pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tests/reliability/lib.sh
source "$here/lib.sh"

QKV="" KILLS=50 UPDATES="" DELAY_MS=250 SEED=1 WORK="" KEEP=0 RANKS=1
usage() {
  sed -n '/^# usage:/,/^# Prints/p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}
while (($#)); do
  case $1 in
    --qkv) QKV=${2:-}; shift 2 ;;
    --kills) KILLS=${2:-}; shift 2 ;;
    --updates) UPDATES=${2:-}; shift 2 ;;
    --delay-ms) DELAY_MS=${2:-}; shift 2 ;;
    --seed) SEED=${2:-}; shift 2 ;;
    --ranks) RANKS=${2:-}; shift 2 ;;
    --work) WORK=${2:-}; shift 2 ;;
    --keep) KEEP=1; shift ;;
    -h | --help) usage ;;
    *) echo "kill_test.sh: unknown argument '$1'" >&2; usage ;;
  esac
done
[[ -x $QKV ]] || { echo "kill_test.sh: --qkv '$QKV' is not an executable" >&2; exit 2; }
for v in KILLS DELAY_MS SEED RANKS; do
  [[ ${!v} =~ ^[0-9]+$ ]] || { echo "kill_test.sh: --${v,,} must be a number" >&2; exit 2; }
done
((KILLS >= 1 && KILLS <= 10000)) || { echo "kill_test.sh: --kills must be in [1, 10000]" >&2; exit 2; }
((RANKS >= 1 && RANKS <= 8)) || { echo "kill_test.sh: --ranks must be in [1, 8]" >&2; exit 2; }
((DELAY_MS >= 20 && DELAY_MS <= 60000)) || { echo "kill_test.sh: --delay-ms must be in [20, 60000]" >&2; exit 2; }
# Enough updates that the run outlasts the kills (a save-window kill may cost an update).
: "${UPDATES:=$((4 * KILLS + 20))}"
if ! [[ $UPDATES =~ ^[0-9]+$ ]] || ((UPDATES < 1)); then
  echo "kill_test.sh: --updates must be >= 1" >&2
  exit 2
fi

if [[ -z $WORK ]]; then
  WORK=$(mktemp -d "${TMPDIR:-/tmp}/qkv_kill_test.XXXXXX")
else
  rm -rf "$WORK" && mkdir -p "$WORK"
fi
cleanup() {
  if [[ -n ${PID:-} ]] && ((PID > 0)); then
    if ((RANKS > 1)); then  # the ranks first: killing the launcher alone would orphan them
      for ((r = 0; r < RANKS; ++r)); do
        p=$(rank_pid "$PID" "$r")
        [[ -n $p ]] && ((p > 0)) && kill -9 "$p" 2>/dev/null
      done
    fi
    kill -9 "$PID" 2>/dev/null
  fi
  ((KEEP)) || rm -rf "$WORK"
}
trap cleanup EXIT
DATA=$WORK/data REF=$WORK/reference RUN=$WORK/run LOGS=$WORK/logs
mkdir -p "$LOGS"
RANDOM=$SEED
# rand N: R = a random number in [0, N), from this shell's seeded RANDOM (not a subshell's).
rand() { R=$(((RANDOM << 15 | RANDOM) % $1)); }
fail() { echo "kill_test.sh: FAIL: $*" >&2; FAILURES=$((FAILURES + 1)); }
FAILURES=0
start_ms=$(now_ms)

prepare_tiny_task "$QKV" "$DATA" 300 || { echo "kill_test.sh: cannot build the vocabulary" >&2; exit 1; }
tiny_train_flags "$DATA" "$UPDATES"
# TRAIN: the program every launch runs; with ranks, through mpirun over loopback TCP, each
# mpirun bounded in time (the test-only save pause travels to the ranks with -x).
TRAIN=("$QKV")
if ((RANKS > 1)); then
  export OMPI_MCA_btl=self,tcp OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo
  TRAIN=(timeout -k 5 300 mpirun --oversubscribe -n "$RANKS" -x QKV_TEST_SAVE_DELAY_MS)
  (($(id -u) == 0)) && TRAIN+=(--allow-run-as-root)
  TRAIN+=("$QKV")
fi

# 1. The uninterrupted reference.
t0=$(now_ms)
if ! env -u QKV_TEST_SAVE_DELAY_MS "${TRAIN[@]}" train "${TRAIN_FLAGS[@]}" --model "$REF" 2>"$LOGS/reference.log" &&
  ! { ((RANKS > 1)) && ompi_exit_race "$LOGS/reference.log"; }; then
  cat "$LOGS/reference.log" >&2
  echo "kill_test.sh: the uninterrupted reference run failed" >&2
  exit 1
fi
ref_ms=$(($(now_ms) - t0))
# Random kills fall within about two updates (and a resume) of the restart.
per_update_ms=$((ref_ms / UPDATES + 1))
random_window_ms=$((2 * per_update_ms + 20))

# launch N DELAY: starts `qkv train --resume` in the background (PID, LOG).
launch() {
  LOG=$LOGS/launch.$1.log
  if (($2 > 0)); then
    QKV_TEST_SAVE_DELAY_MS=$2 "${TRAIN[@]}" train "${TRAIN_FLAGS[@]}" --model "$RUN" --resume 2>"$LOG" &
  else
    env -u QKV_TEST_SAVE_DELAY_MS "${TRAIN[@]}" train "${TRAIN_FLAGS[@]}" --model "$RUN" --resume 2>"$LOG" &
  fi
  PID=$!
  WRITER=$PID VICTIM=$PID  # one process: it writes and it is killed
}

# wait_for CONDITION_FN: polls every 5 ms until the function succeeds (0) or the process
# ends (1); 60 s at most (2).
wait_for() {
  local deadline=$(($(now_ms) + 60000))
  while true; do
    "$1" && return 0
    kill -0 "$PID" 2>/dev/null || { "$1" && return 0; return 1; }
    (($(now_ms) > deadline)) && return 2
    sleep 0.005
  done
}
started() { grep -qs '^model: ' "$LOG"; }  # -s: the file may not exist yet
TARGET=""  # the checkpoint file a save-window kill waits for
saving() { compgen -G "$RUN/$TARGET.tmp.$WRITER.*" >/dev/null; }

# count_resume: after a launch that found a train state started or ended, counts whether it
# resumed it.
count_resume() {
  ((had_state && !resume_counted)) || return 0
  resume_counted=1
  resumes=$((resumes + 1))
  if grep -q 'resumed at update' "$LOG"; then resumes_ok=$((resumes_ok + 1)); else
    fail "launch $launch_no did not resume the saved run: $(grep -m1 -e '^model: ' -e 'nothing to resume' -e 'error' "$LOG")"
  fi
}

# show_log_tail: the failed launch's last lines (mpirun's reports span several; the work
# directory, with the whole log, is removed at the end unless --keep).
show_log_tail() {
  echo "kill_test.sh: the end of launch $launch_no's log:" >&2
  tail -n 20 "$LOG" | sed 's/^/  | /' >&2
}

# finished_on_its_own: the launch ended before the kill; its status says how. A train
# state that does not load is a corrupt checkpoint.
finished_on_its_own() {
  wait "$PID"
  local rc=$?
  PID=""
  ((rc != 0 && RANKS > 1)) && ompi_exit_race "$LOG" && rc=0
  count_resume
  if ((rc != 0)); then
    fail "launch $launch_no exited with status $rc: $(tail -n 1 "$LOG")"
    show_log_tail
    grep -q "error: .*train_state.safetensors" "$LOG" && corrupt=$((corrupt + 1))
  fi
  DONE=1 DONE_HOW="launch $launch_no ended on its own while the test waited for it to ${WAITING_FOR:-start}"
}

DONE_HOW=""      # how the run came to its end, for the message when kills are missing
WAITING_FOR=""   # what the test was waiting for a launch to do
kills=0 kills_in_save=0 kills_in_state=0 kills_in_model=0 aimed_at_save=0
resumes=0 resumes_ok=0 fresh_starts=0 model_loads=0 corrupt=0 launch_no=0 DONE=0
while ((kills < KILLS && DONE == 0)); do
  launch_no=$((launch_no + 1))
  had_state=0 resume_counted=0
  [[ -f $RUN/train_state.safetensors ]] && had_state=1
  # Every other kill aims at a save, so at least half land in one.
  aim_save=$((launch_no % 2))
  if ((aim_save)); then launch "$launch_no" "$DELAY_MS"; else launch "$launch_no" 0; fi

  WAITING_FOR=start
  wait_for started
  case $? in
    1) finished_on_its_own; continue ;;
    2) fail "launch $launch_no did not start within 60 s"; break ;;
  esac
  count_resume
  ((had_state)) || fresh_starts=$((fresh_starts + 1))
  if ((RANKS > 1)); then
    rand "$RANKS"
    # Looked for until both are found or the job ends: under load (CI's parallel tests) a
    # single look has come back empty while the job ran on (twice in ~15 CI runs).
    WRITER="" VICTIM=""
    for ((look = 0; look < 200; ++look)); do
      WRITER=$(rank_pid "$PID" 0)
      VICTIM=$(rank_pid "$PID" "$R")
      [[ -n $WRITER && -n $VICTIM ]] && break
      kill -0 "$PID" 2>/dev/null || break
      sleep 0.05
    done
    ((aim_save)) && VICTIM=$WRITER
    if [[ -z $WRITER || -z $VICTIM ]] || ((WRITER <= 0 || VICTIM <= 0)); then
      if kill -0 "$PID" 2>/dev/null; then
        fail "launch $launch_no runs, but its ranks were not found among its processes for 10 s:"
        ps -o pid,ppid,stat,args --forest --sid "$(ps -o sid= -p "$PID" | tr -d ' ')" >&2 || true
        break
      fi
      wait "$PID" 2>/dev/null
      # The job ended before its ranks could be found: it finished.
      PID="" DONE=1 DONE_HOW="launch $launch_no: it ended before its ranks were found"
      continue
    fi
  fi

  if ((aim_save)); then
    aimed_at_save=$((aimed_at_save + 1))
    rand 2
    if ((R)); then TARGET=train_state.safetensors; else TARGET=model.safetensors; fi
    WAITING_FOR="write $TARGET"
    wait_for saving
    case $? in
      1) finished_on_its_own; continue ;;
      2) fail "launch $launch_no never wrote $TARGET within 60 s"; break ;;
    esac
    rand $((DELAY_MS / 2))
  else
    rand "$random_window_ms"
  fi
  sleep_ms "$R"
  if ((RANKS > 1)); then
    # The job ends through Open MPI once one rank dies: bounded by the timeout above.
    kill -9 "$VICTIM" 2>/dev/null && victim_killed=1 || victim_killed=0
    wait "$PID" 2>/dev/null
    rc=$?
    ((victim_killed)) && ((rc != 0)) && rc=137
  else
    kill -9 "$PID" 2>/dev/null
    wait "$PID" 2>/dev/null
    rc=$?
  fi
  if ((rc != 137)); then
    # It ended on its own just before the kill.
    PID=""
    ((rc != 0 && RANKS > 1)) && ompi_exit_race "$LOG" && rc=0
    ((rc == 0)) && {
      DONE=1 DONE_HOW="launch $launch_no ended on its own just before its kill"
      continue
    }
    fail "launch $launch_no exited with status $rc: $(tail -n 1 "$LOG")"
    show_log_tail
    continue
  fi
  kills=$((kills + 1))
  if compgen -G "$RUN/train_state.safetensors.tmp.$WRITER.*" >/dev/null; then
    kills_in_save=$((kills_in_save + 1)) kills_in_state=$((kills_in_state + 1))
  elif compgen -G "$RUN/model.safetensors.tmp.$WRITER.*" >/dev/null; then
    kills_in_save=$((kills_in_save + 1)) kills_in_model=$((kills_in_model + 1))
  fi
  PID=""
  # The model file left behind must load (the train state is loaded by the next resume).
  if [[ -f $RUN/model.safetensors ]]; then
    model_loads=$((model_loads + 1))
    loads_model "$QKV" "$RUN" "$DATA" || {
      corrupt=$((corrupt + 1))
      fail "after kill $kills, $RUN/model.safetensors does not load"
    }
  fi
done

# The last launch runs to the end.
if ((DONE == 0)) && ((FAILURES == 0)); then
  launch_no=$((launch_no + 1))
  had_state=0 resume_counted=0
  [[ -f $RUN/train_state.safetensors ]] && had_state=1
  launch "$launch_no" 0
  finished_on_its_own
fi
((kills == KILLS)) || fail "the run finished after $kills of $KILLS kills (${DONE_HOW:-?}); pass a larger --updates"
((2 * kills_in_save >= kills)) ||
  fail "only $kills_in_save of $kills kills landed during a checkpoint write; raise --delay-ms"
((resumes_ok == resumes)) || fail "$((resumes - resumes_ok)) of $resumes resumes failed"

equal=no
if [[ -f $RUN/model.safetensors ]] && cmp -s "$REF/model.safetensors" "$RUN/model.safetensors"; then
  equal=yes
else
  fail "the final model.safetensors differs from the uninterrupted run's"
fi
loads_model "$QKV" "$RUN" "$DATA" || { corrupt=$((corrupt + 1)); fail "the final model does not load"; }
# A killed save leaves its temporary file; the next run removes it (train.yml's too).
stale=$(find "$RUN" -name '*.tmp.*' | wc -l)
((stale == 0)) || fail "$stale temporary files were left in $RUN after the final run"
cleaned=$(cat "$LOGS"/launch.*.log | sed -n 's/^removed \([0-9]*\) temporary file.*/\1/p' |
  awk '{ n += $1 } END { print n + 0 }')

wall_s=$((($(now_ms) - start_ms + 500) / 1000))
cat <<EOF
kill test: $UPDATES updates of a tiny RNN on $RANKS rank(s), checkpoint after every update; seed $SEED
  kills (SIGKILL):                        $kills
  kills during a checkpoint write:        $kills_in_save (train_state $kills_in_state, model $kills_in_model; $aimed_at_save aimed at a save, pause ${DELAY_MS} ms)
  resumes succeeded:                      $resumes_ok/$resumes (fresh starts before the first checkpoint: $fresh_starts)
  corrupt checkpoints:                    $corrupt (model.safetensors loaded after $model_loads kills and at the end; every train_state by the next resume)
  final params equal uninterrupted run:   $equal (model.safetensors byte-for-byte)
  temporary files left by killed saves:   $cleaned checkpoint files removed by the next runs; $stale left at the end
  wall time:                              ${wall_s} s (reference run ${ref_ms} ms)
EOF
if ((FAILURES > 0)); then
  echo "kill test: FAILED ($FAILURES)"
  exit 1
fi
echo "kill test: passed"

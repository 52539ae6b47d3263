#!/usr/bin/env bash
# Builds the libFuzzer targets (the fuzz preset: clang 14, ASan + UBSan) and runs each
# for SECONDS (default 60), starting from the committed seeds in fuzz/corpus/<target>/.
# Prints executions and findings per target; exits non-zero if any target found a crash,
# a sanitizer report, an uncaught non-qkv exception, a leak, a timeout or an OOM.
#   scripts/run_fuzz.sh [SECONDS]
# Inputs found to add coverage go to build/fuzz/grown/<target>/ (not committed); findings
# to build/fuzz/findings/<target>/ (crash-*, timeout-*, oom-*, leak-*), each replayable
# with build/fuzz/fuzz/<target> FILE.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
[[ $seconds =~ ^[0-9]+$ && $seconds -ge 1 ]] || { echo "usage: $0 [SECONDS >= 1]" >&2; exit 2; }

# target:max_len:dictionary. Model and training-state seeds are whole (tiny) models of up
# to 20 KB; a longer input only slows the search without reaching new code.
targets=(fuzz_safetensors:4096:safetensors fuzz_model_file:16384:safetensors
         fuzz_train_state:32768:safetensors fuzz_corpus:4096: fuzz_bleu:4096:
         fuzz_config:2048:config)

start=$(date +%s)
cmake --preset fuzz >/dev/null
cmake --build build/fuzz -j2 --target "${targets[@]%%:*}"
echo "fuzz build: $(( $(date +%s) - start )) s"

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
# Targets run side by side, one per core (each libFuzzer process is single-threaded), so
# the wall time is about SECONDS x targets / cores; FUZZ_JOBS overrides the count.
jobs=${FUZZ_JOBS:-$(nproc)}
[[ $jobs =~ ^[0-9]+$ && $jobs -ge 1 ]] || { echo "$0: FUZZ_JOBS must be a number >= 1" >&2; exit 2; }

# Runs one target; its table row goes to build/fuzz/logs/<target>.row, its exit code to .rc.
fuzz_one() {
  local target=$1 max_len=$2 dict=$3
  local dict_flag=()
  [[ -n $dict ]] && dict_flag=(-dict="fuzz/dict/$dict.dict")
  local work=build/fuzz/grown/$target findings=build/fuzz/findings/$target
  local log=build/fuzz/logs/$target.log
  mkdir -p "$work" "$findings" "$(dirname "$log")"
  local rc=0
  # -rss_limit_mb also caps single allocations (malloc_limit_mb defaults to it): a
  # loader asked to allocate more than 2 GB by a small file is a finding.
  "build/fuzz/fuzz/$target" -max_total_time="$seconds" -max_len="$max_len" \
    -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 "${dict_flag[@]}" \
    -artifact_prefix="$findings/" "$work" "fuzz/corpus/$target" >"$log" 2>&1 || rc=$?
  local execs speed corpus result=ok
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  speed=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  corpus=$(find "$work" -type f | wc -l)
  [[ $rc -ne 0 ]] && result="FINDING (exit $rc): $(ls -t "$findings" | head -1)"
  printf '%-18s %12s %10s %8s  %s\n' "$target" "${execs:-?}" "${speed:-?}" "$corpus" "$result" \
    >"build/fuzz/logs/$target.row"
  echo "${execs:-0}" >"build/fuzz/logs/$target.execs"
  echo "$rc" >"build/fuzz/logs/$target.rc"
}

mkdir -p build/fuzz/logs
running=0
for entry in "${targets[@]}"; do
  IFS=: read -r target max_len dict <<<"$entry"
  rm -f "build/fuzz/logs/$target".{row,execs,rc}
  fuzz_one "$target" "$max_len" "$dict" &
  running=$((running + 1))
  if [[ $running -ge $jobs ]]; then
    wait -n || true
    running=$((running - 1))
  fi
done
wait || true

failed=0
total=0
printf '%-18s %12s %10s %8s  %s\n' target executions exec/s corpus result
for entry in "${targets[@]}"; do
  target=${entry%%:*}
  log=build/fuzz/logs/$target.log
  rc=$(cat "build/fuzz/logs/$target.rc" 2>/dev/null || echo "no result")
  cat "build/fuzz/logs/$target.row" 2>/dev/null || printf '%-18s did not report\n' "$target"
  total=$((total + $(cat "build/fuzz/logs/$target.execs" 2>/dev/null || echo 0)))
  if [[ $rc != 0 ]]; then
    failed=$((failed + 1))
    grep -E 'ERROR|SUMMARY|runtime error|terminate|invariant|Exception|what\(\)' "$log" | head -20 | sed 's/^/    /'
    echo "    full log: $log"
  fi
done
echo "fuzzing: $total executions in total, $failed target(s) with findings, $jobs at a time," \
     "$(( $(date +%s) - start )) s including the build"
[[ $failed -eq 0 ]]

#!/usr/bin/env bash
# Runs qkv_bench_encoder (encoder forward + backward time against source length: the
# bidirectional GRU against the self-attention encoder at a matched parameter count, at 1
# and 2 threads) and writes its table with the machine context to
# bench/results/<date>-encoder.txt (and stdout). Usage:
#   bench/run_encoder.sh [BUILD_DIR] [bench flags...]   (BUILD_DIR defaults to build/release)
# Bench flags go to the binary (see bench/bench_encoder.cpp), e.g. --reps 9 or
# --lengths 10,50 --batch 32. OUT=FILE writes there instead; OUT=- only prints. About
# 1-2 minutes with the defaults on 2 idle cores (the 200-token rows dominate).
# Run on an otherwise idle machine: the 2-thread column needs the second core free; the
# `run:` line records the load average and the CPU steal over the run.
set -euo pipefail
cd "$(dirname "$0")/.."
build=build/release
if [[ $# -gt 0 && $1 != --* ]]; then
  build=$1
  shift
fi
exe="$build/bench/qkv_bench_encoder"
[[ -x "$exe" ]] || { echo "no $exe: build the qkv_bench_encoder target first" >&2; exit 1; }
py=/usr/bin/python3
[[ -x $py ]] || py=python3
out=${OUT:-bench/results/$(date +%Y-%m-%d)-encoder.txt}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

cpu0=$(grep '^cpu ' /proc/stat)
load0=$(cut -d' ' -f1-3 /proc/loadavg)
start=$SECONDS
"$exe" "$@" > "$tmp/table.txt"
cpu1=$(grep '^cpu ' /proc/stat)
load1=$(cut -d' ' -f1-3 /proc/loadavg)

{
  echo "command: $exe $*"
  echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet 2>/dev/null || echo ' (working tree modified)')"
  $py - "$((SECONDS - start))" "$load0" "$load1" "$cpu0" "$cpu1" <<'PY'
import sys
sys.path.insert(0, "bench")  # the scripts run from the repository root
from run_context import print_env_and_load
secs, load0, load1, cpu0, cpu1 = sys.argv[1:6]
print_env_and_load("qkv_bench_encoder (medians as its header says)", secs, load0, load1, cpu0, cpu1)
PY
  cat "$tmp/table.txt"
} > "$tmp/report.txt"

cat "$tmp/report.txt"
if [[ $out != - ]]; then
  mkdir -p "$(dirname "$out")"
  cp "$tmp/report.txt" "$out"
  echo "wrote $out" >&2
fi

#!/usr/bin/env bash
# qkv serve under load: LOAD clients x requests (default 32x1000) on keep-alive connections,
# each request 1, 2 or 4 Multi30k test sentences, against the Transformer of tests/compat.
# Every answer is checked against `qkv translate` on the same sentences; prints p50/p99
# latency and throughput beside the CLI translating all of them as one file.
#   bench/serve_load.sh                      # build/release's qkv
#   BUILD=build/optimised LOAD=8x200 THREADS=2 bench/serve_load.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$root/build/release}
[ -x "$build/tools/qkv/qkv" ] || { echo "serve_load: no $build/tools/qkv/qkv; build it first" >&2; exit 1; }
QKV_TOOL="$build/tools/qkv/qkv" QKV_COMPAT_DIR="$root/tests/compat" \
QKV_DATA_DIR="$root/data/multi30k" QKV_SERVE_LOAD="${LOAD:-32x1000}" \
QKV_SERVE_THREADS="${THREADS:-1}" \
  python3 "$root/tools/qkv/tests/serve_test.py" LoadTest

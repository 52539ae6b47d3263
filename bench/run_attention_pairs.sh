#!/usr/bin/env bash
# Issue 13's attention bar, measured as pairs: flash forward + backward at 1 thread (H = 8,
# d = 64; B=1 T=512/2048, B=8 T=512/1024), qkv_bench_attention and its PyTorch peer
# alternated case by case for ROUNDS rounds, with a PAUSE between processes. Usage:
#   bench/run_attention_pairs.sh [BUILD_DIR]     (BUILD_DIR defaults to build/release)
# ROUNDS (default 3), REPS calls per process (default 5), PAUSE seconds (default 10),
# SHAPES (default "1:512 8:512 1:2048 8:1024", B:T pairs).
# Why a separate script: on the 2-vCPU VM one process's times move 10-20 % from minute
# to minute, and right after torch's process exits qkv's next calls ran 20-30 % slower
# (the pause lets that settle); torch's own 1-thread times are bimodal (calls of 2-7×
# its fast time, its temporaries faulted in afresh). One run of run_attention.sh is one
# pair per case; this prints every round and the medians over rounds of
#   torch median / qkv median     and     torch fastest / qkv fastest
# (the second reads both sides' undisturbed mode). ~4-6 minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/release}
exe="$build/bench/qkv_bench_attention"
[[ -x "$exe" ]] || { echo "no $exe: build the qkv_bench_attention target first" >&2; exit 1; }
for v in ROUNDS REPS PAUSE; do
  val=${!v:-}
  [[ -z $val || $val =~ ^[1-9][0-9]*$ || ($v == PAUSE && $val == 0) ]] ||
    { echo "$v=$val: give a positive whole number" >&2; exit 2; }
done
rounds=${ROUNDS:-3} reps=${REPS:-5} pause=${PAUSE:-10}
shapes=${SHAPES:-1:512 8:512 1:2048 8:1024}
for bt in $shapes; do
  [[ $bt =~ ^[1-9][0-9]*:[1-9][0-9]*$ ]] ||
    { echo "SHAPES: '$bt' is not B:T (positive whole numbers, e.g. 8:1024)" >&2; exit 2; }
done
/usr/bin/python3 -c 'import torch' 2>/dev/null ||
  { echo "/usr/bin/python3 has no torch (Debian: apt install python3-torch)" >&2; exit 77; }
cases=()
for bt in $shapes; do
  cases+=("sdpa:b=${bt%%:*}:h=8:t=${bt#*:}:d=64:causal=0:mode=fwdbwd:thr=1")
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$exe" --info | cut -c1-200 >&2
for r in $(seq "$rounds"); do
  for c in "${cases[@]}"; do
    sleep "$pause"
    "$exe" --reps "$reps" --min-time 0.2 "$c" | sed "s/^{/{\"side\": \"qkv\", \"round\": $r, /" >> "$tmp/all.jsonl"
    sleep "$pause"
    env -u OPENBLAS_CORETYPE /usr/bin/python3 bench/peer_torch_attention.py --reps "$reps" \
      --min-time 0.2 "$c" | sed "s/^{/{\"side\": \"torch\", \"round\": $r, /" >> "$tmp/all.jsonl"
    echo "round $r done: $c" >&2
  done
done
/usr/bin/python3 - "$tmp/all.jsonl" <<'PY'
import json, statistics, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
by = {}
for r in rows:
    by.setdefault(r["case"], {}).setdefault(r["round"], {})[r["side"]] = r
print("shape (H=8, d=64, fwd+bwd, 1 thread) round | qkv ms med (min) | torch ms med (min) | med/med  min/min")
for case, rounds in by.items():
    shape = case.split(":d=")[0][len("sdpa:"):]  # b=B:h=8:t=T
    med_ratios, min_ratios = [], []
    for rnd, sides in sorted(rounds.items()):
        q, t = sides["qkv"], sides["torch"]
        qmed, qmin = q["median_s"] * 1e3, min(q["times_s"]) * 1e3
        tmed, tmin = t["median_s"] * 1e3, min(t["times_s"]) * 1e3
        med_ratios.append(tmed / qmed)
        min_ratios.append(tmin / qmin)
        print(f"{shape:36} {rnd:5} | {qmed:8.2f} ({qmin:7.2f}) | {tmed:8.2f} ({tmin:7.2f}) |"
              f" {tmed / qmed:6.2f} {tmin / qmin:8.2f}")
    print(f"{shape:36} {'all':>5} | median over rounds: torch/qkv {statistics.median(med_ratios):.2f}"
          f" (medians), {statistics.median(min_ratios):.2f} (fastest calls)")
PY

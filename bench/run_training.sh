#!/usr/bin/env bash
# Runs qkv_bench_training and its PyTorch peer (bench/peer_torch_training.py, Debian's
# /usr/bin/python3 with torch 1.13) in one invocation and prints one table: training
# tokens/s (real source + target tokens per second; one update = forward, label-smoothed
# cross-entropy, backward, Adam) of the Transformer, the Bahdanau RNN and the bottleneck
# RNN, on the same batches (written once by the peer, read by both), at 2 and 1 threads.
# Usage:
#   bench/run_training.sh [BUILD_DIR]        (BUILD_DIR defaults to build/release)
# After WARMUP (default 1) untimed updates, REPS (default 5) timed windows of UPDATES
# (default 1) updates at 2 threads, REPS1 (default 3) at 1 thread (the secondary column;
# keeps the run near 9 minutes on 2 cores); THREADS (default "2 1") the thread
# columns; PEER=0 skips torch; BATCHES (default 4) batches in the file, cycled, SEED
# (default 1) their seed; BUCKETED=1 makes them as qkv train does (sorted by length:
# little padding) instead of unbucketed; COLD_ALLOC=1 keeps glibc's malloc defaults on
# both sides.
# SIMD=AVX2 runs both sides as on a CPU without AVX-512 (what the issue-13 AMD EPYC was):
# qkv's kernels pinned to AVX2 (--simd) and its GEMM on OpenBLAS, as Auto picks there
# (unless QKV_GEMM is set), OpenBLAS's Haswell kernels on both sides (unless
# OPENBLAS_CORETYPE is set), torch's own kernels at ATEN_CPU_CAPABILITY=avx2, and the
# share of peak against the AVX2 FMA peak.
# Groups alternate qkv / torch per (model, threads), so each pair is measured within a
# minute or two of each other; ROUNDS (default 1) repeats each pair that many times in a
# row (qkv, torch, qkv, torch, ...): this VM's speed drifts 10-20 % between processes,
# not equally for both sides, so one pair's ratio is one sample. With ROUNDS > 1 a row's
# qkv/torch is the median of its rounds' ratios, "rounds" their range, and its tok/s and
# ms/upd the medians over the rounds.
# With qkv_bench_kernels in BUILD_DIR the FMA peak is measured first, and every model's
# rows end as GFLOP/s and a share of it (bench/training_flops.py counts the products).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/release}
exe="$build/bench/qkv_bench_training"
[[ -x "$exe" ]] || { echo "no $exe: build the qkv_bench_training target first" >&2; exit 1; }
reps=${REPS:-5} reps1=${REPS1:-3} updates=${UPDATES:-1} warmup=${WARMUP:-1}
threads=${THREADS:-2 1} rounds=${ROUNDS:-1}
[[ $rounds =~ ^[1-9][0-9]*$ ]] || { echo "run_training.sh: ROUNDS='$rounds' is not a positive integer" >&2; exit 2; }
py=/usr/bin/python3
[[ -x $py ]] || py=python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

peer=${PEER:-1}
if [[ $peer != 0 ]] && ! /usr/bin/python3 -c 'import torch' 2>/dev/null; then
  echo "note: /usr/bin/python3 has no torch (Debian: apt install python3-torch); peer columns skipped" >&2
  peer=0
fi
alloc=()
[[ ${COLD_ALLOC:-0} == 1 ]] && alloc=(--cold-alloc)
flags=(--updates "$updates" --warmup "$warmup" "${alloc[@]}")
simd=()
peak_filter='^BM_FmaPeak/'
if [[ -n ${SIMD:-} ]]; then
  simd=(--simd "$SIMD")
  case $SIMD in
    AVX2) aten=avx2 peak_filter='^BM_FmaPeakAvx2/' ;;
    AVX3) aten=avx512 ;;
    *) aten=default ;;
  esac
  export QKV_GEMM=${QKV_GEMM:-openblas} OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-Haswell}
  export ATEN_CPU_CAPABILITY=${ATEN_CPU_CAPABILITY:-$aten}
fi

# The batches: standard library only, so this works without torch too.
bucket=()
[[ ${BUCKETED:-0} == 1 ]] && bucket=(--bucketed)
$py bench/peer_torch_training.py --make-batches "$tmp/batches.txt" --seed "${SEED:-1}" \
  --count "${BATCHES:-4}" "${bucket[@]}"
"$exe" "${simd[@]}" --info > "$tmp/qkv_info.json"
[[ $peer != 0 ]] && /usr/bin/python3 bench/peer_torch_training.py --info "${alloc[@]}" \
  > "$tmp/torch_info.json"
# The machine's FMA peak in the same run (qkv_bench_kernels, when built): every model's
# rows are also given as GFLOP/s and a share of it (bench/training_flops.py).
kern="$build/bench/qkv_bench_kernels"
if [[ -x $kern ]]; then
  echo "== FMA peak ($kern)" >&2
  "$kern" --benchmark_filter="$peak_filter" --benchmark_repetitions=3 \
    --benchmark_out="$tmp/fma.json" \
    --benchmark_out_format=json > /dev/null
else
  echo "note: no $kern (build the qkv_bench_kernels target): no FMA peak, no share of it" >&2
fi
cpu0=$(grep '^cpu ' /proc/stat)
load0=$(cut -d' ' -f1-3 /proc/loadavg)
start=$SECONDS
for model in transformer rnn-additive rnn-none; do
  for t in $threads; do
    c="$model:thr=$t"
    r=$reps
    [[ $t == 1 ]] && r=$reps1
    for ((round = 1; round <= rounds; ++round)); do
      echo "== qkv $c, round $round of $rounds" >&2
      "$exe" --batches "$tmp/batches.txt" --reps "$r" "${flags[@]}" "${simd[@]}" "$c" |
        tee -a "$tmp/qkv.jsonl" |
        cut -c1-140 >&2
      if [[ $peer != 0 ]]; then
        echo "== torch $c, round $round of $rounds" >&2
        /usr/bin/python3 bench/peer_torch_training.py --batches "$tmp/batches.txt" --reps "$r" \
          "${flags[@]}" "$c" | tee -a "$tmp/torch.jsonl" | cut -c1-140 >&2
      fi
    done
  done
done
cpu1=$(grep '^cpu ' /proc/stat)
load1=$(cut -d' ' -f1-3 /proc/loadavg)

$py - "$tmp" "$reps/$reps1" "$updates" "$warmup" "$((SECONDS - start))" "$load0" "$load1" "$cpu0" \
  "$cpu1" "${COLD_ALLOC:-0}" "$rounds" <<'PY'
import json, os, statistics, sys
sys.path.insert(0, "bench")  # the scripts run from the repository root
from run_context import by_case, omp_line, percent_of, pooled, print_env_and_load, round_ratios
tmp, reps, updates, warmup, secs, load0, load1, cpu0, cpu1, cold, rounds = sys.argv[1:12]

def load(name):
    p = os.path.join(tmp, name)
    return [json.loads(l) for l in open(p) if l.strip()] if os.path.exists(p) else []
ctx = json.load(open(f"{tmp}/qkv_info.json"))
tctx = json.load(open(f"{tmp}/torch_info.json")) if os.path.exists(f"{tmp}/torch_info.json") else {}
qkv_rounds, torch_rounds = by_case(load("qkv.jsonl")), by_case(load("torch.jsonl"))
# A row's rounds as one record: tok/s and ms/upd the medians over the rounds, the windows
# of every round pooled for the spread (run_context.pooled).
row = lambda runs: pooled(runs, "tokens_per_s", ("tokens_per_s", "s_per_update"), "rates")
qkv = {c: row(v) for c, v in qkv_rounds.items()}
torch = {c: row(v) for c, v in torch_rounds.items()}

print(f"cpu: {ctx['cpu_model']}, {ctx['num_cpus']} CPUs; {ctx['cpu_features']}")
print(f"qkv: simd target {ctx['qkv_simd_target']}; gemm backend {ctx['qkv_gemm_backend']}; "
      f"openblas: {ctx['openblas']}")
if tctx:
    print(f"torch {tctx['torch_version']} ({tctx['python']}): BLAS_INFO={tctx['torch_blas_info']}, "
          f"BLAS = {tctx.get('openblas_path', '?')} ({tctx['openblas']}); CPU capability "
          f"{tctx['torch_cpu_capability']}; parallel backend {tctx['torch_parallel_backend']}; "
          f"mkldnn {tctx['torch_mkldnn']}; allocator {tctx['allocator']}")
    print("threads per row: qkv set_num_threads(t); torch.set_num_threads(t) + openblas_set_num_threads(t)")
    print(omp_line(tctx))
else:
    print("torch: not run (no torch in /usr/bin/python3, or PEER=0)")
print(f"allocator: {'glibc defaults on both sides (COLD_ALLOC=1)' if cold == '1' else 'mallopt(no mmap, no trim) on both sides'}")
batches = open(f"{tmp}/batches.txt").read().split("\n")
shapes = [l.split()[1:] for l in batches if l.startswith("batch ")]
# Each batch's real target tokens (incl. EOS): its header is followed by the source
# lengths, then the target lengths.
real_sources = [sum(map(int, batches[i + 1].split())) for i, l in enumerate(batches) if l.startswith("batch ")]
real_targets = [sum(map(int, batches[i + 2].split())) for i, l in enumerate(batches) if l.startswith("batch ")]
src_padding = 1 - sum(real_sources) / sum(int(b) * int(ts) for b, ts, _ in shapes)
padding = 1 - sum(real_targets) / sum(int(b) * int(tt) for b, _, tt in shapes)
bucketed = os.environ.get("BUCKETED", "0") == "1"
print(f"batches: {batches[1]}; [B, Ts, Tt] = " + " ".join("[" + ", ".join(s) + "]" for s in shapes) +
      f"; padding: {100 * src_padding:.0f}% of the source and {100 * padding:.0f}% of the target positions "
      + ("(BUCKETED=1: pairs sorted by target, then source length, as qkv train batches)" if bucketed
         else "(no length bucketing)"))
print_env_and_load(f"{warmup} warm-up update(s), then {reps.split('/')[0]} (2 threads) / "
                   f"{reps.split('/')[1]} (1 thread) windows of {updates} update(s), medians; "
                   f"each row {rounds} round(s) of one qkv then one torch process",
                   secs, load0, load1, cpu0, cpu1)

def rate(r):
    return f"{r['tokens_per_s']:10.0f}" if r and "tokens_per_s" in r else f"{'-' if not r else 'error':>10}"
def ms(r):
    return f"{r['s_per_update'] * 1e3:8.0f}" if r and "s_per_update" in r else f"{'-':>8}"
def spread(r):  # (max - min) / median of the windows, a noise figure
    if not r or "rates" not in r: return f"{'-':>5}"
    v = r["rates"]
    return f"{100 * (max(v) - min(v)) / statistics.median(v):4.0f}%"

hdr = (f"{'config':<13}{'thr':>3} | {'qkv tok/s':>10} {'ms/upd':>8} {'spread':>6} | "
       f"{'torch tok/s':>11} {'ms/upd':>8} {'spread':>6} | {'qkv/torch':>9} {'rounds':>11} | "
       f"{'params qkv':>10} {'torch':>9}")
print("\n" + hdr + "\n" + "-" * len(hdr))
mismatch = []
for name, r in qkv.items():
    model, thr = name.split(":thr=")
    p = torch.get(name)
    ratios = round_ratios(qkv_rounds[name], torch_rounds.get(name, []), "tokens_per_s")
    ratio = f"{statistics.median(ratios):9.2f}" if ratios else f"{'-':>9}"
    span = f"{min(ratios):.2f}-{max(ratios):.2f}" if len(ratios) > 1 else "-"
    pq, pt = r.get("params"), (p or {}).get("params")
    if pq and pt and abs(pq - pt) > 0.01 * pq:
        mismatch.append(f"{name}: qkv {pq} vs torch {pt}")
    print(f"{model:<13}{thr:>3} | {rate(r)} {ms(r)} {spread(r):>6} | {rate(p):>11} {ms(p)} "
          f"{spread(p):>6} | {ratio} {span:>11} | {pq or '-':>10} {pt or '-':>9}")
    for err in (r.get("error"), (p or {}).get("error")):
        if err: print(f"  error: {err}")
print("""
tok/s: real source + target tokens (padding not counted) per second of wall time, median
over the windows (with ROUNDS > 1, the median of the rounds'; the phases below are the
first round's); one update = forward (teacher forcing) + label-smoothed cross-entropy
(0.1, pad ignored) + backward + Adam step + zero_grad, dropout 0.1. ms/upd: median wall
time per update. spread: (max - min) / median over the windows (of every round).
qkv/torch = qkv tok/s / torch tok/s (> 1: qkv faster), with ROUNDS > 1 the median of the
rounds' ratios (each round's qkv process against its torch process) and "rounds" their
range. params: trainable parameters, tied tables counted once.""")
print("phases, ms per update (forward / loss / backward / optimizer), qkv | torch:")
for name, r in qkv.items():
    p = torch.get(name, {})
    f = lambda x: " / ".join(f"{x['phase_ms'][k]:.0f}" for k in ("forward", "loss", "backward", "optimizer")) if "phase_ms" in x else "-"
    loss = lambda x: f"loss {x['first_loss']:.3f} -> {x['last_loss']:.3f}" if "first_loss" in x else ""
    mib = lambda x: (f"peak {x['peak_rss_kb'] / 1024:.0f} MiB" if "peak_rss_kb" in x else "") + (
        f", {x['minflt_per_update']:.0f} faults/upd" if "minflt_per_update" in x else "")
    print(f"  {name:<18} {f(r):<22} {loss(r)}, {mib(r)} | {f(p):<22} {loss(p)}, {mib(p)}")
print("tok/s of each window, qkv | torch:")
for name, r in qkv.items():
    w = lambda x: " ".join(f"{v:.0f}" for v in x["rates"]) if "rates" in x else "-"
    print(f"  {name:<18} {w(r)} | {w(torch.get(name, {}))}")
# Each model's counted FLOPs against the FMA peak measured in this run: how busy each
# side keeps the machine, and what a speed-up over the peer would require of it.
from training_flops import update_flops
fma, peak_name = {}, "BM_FmaPeak"
if os.path.exists(f"{tmp}/fma.json"):
    for b in json.load(open(f"{tmp}/fma.json"))["benchmarks"]:
        name = b.get("run_name", b["name"])
        # The best of the repetitions: a ceiling, which another process on the machine
        # can only lower (one run's 2-thread AVX2 peak read 115 of ~240 GFLOP/s).
        if name.startswith(("BM_FmaPeak/", "BM_FmaPeakAvx2/")) and b.get("run_type") == "iteration":
            t = name.split("threads:")[1].split("/")[0]
            fma[t] = max(fma.get(t, 0.0), b["GFLOP/s"])
            peak_name = name.split("/")[0]
models = list(dict.fromkeys(name.split(":thr=")[0] for name in qkv))  # first-seen order
flops = {m: statistics.mean(update_flops(*map(int, s), m) for s in shapes) for m in models}
# qkv computes the output projection on the real target rows only (padded ones are
# ignored by the loss) and its RNNs' recurrent layers on real positions; its rates count
# the products it performs.
qkv_flops = {m: statistics.mean(update_flops(*map(int, s), m, r)
                               for s, r in zip(shapes, zip(real_sources, real_targets)))
             for m in models}
print("\nFLOPs per update (bench/training_flops.py: matrix products on the padded shapes, "
      "backward = 2x forward; the batches' mean): " +
      ", ".join(f"{m} {flops[m] / 1e9:.1f} GFLOP" for m in models) +
      "; as qkv performs them (the Transformer's position-wise products on the real rows only, "
      "the RNNs' recurrent layers on real positions, their output projection on the real "
      "target rows): " +
      ", ".join(f"{m} {qkv_flops[m] / 1e9:.1f} GFLOP" for m in models))
if fma:
    print(f"FMA peak measured in this run (qkv_bench_kernels {peak_name}, best of 3): " +
          ", ".join(f"{fma[t]:.0f} GFLOP/s at {t} thread{'s' if t != '1' else ''}" for t in sorted(fma)))
for name, r in qkv.items():
    if "s_per_update" not in r: continue
    model, t = name.split(":thr=")
    p = torch.get(name, {})
    rate = lambda x, counted: counted[model] / x["s_per_update"] / 1e9
    share = lambda g: f" ({percent_of(g, fma[t], 'peak')})" if t in fma else ""
    line = f"  {name:<18} qkv {rate(r, qkv_flops):.0f} GFLOP/s{share(rate(r, qkv_flops))}"
    if "s_per_update" in p:
        line += f", torch {rate(p, flops):.0f} GFLOP/s{share(rate(p, flops))}"
        if t in fma:
            # qkv's FLOPs in torch's time per update, k times faster.
            need = lambda k: (f"{k}x torch needs {k * rate(p, qkv_flops):.0f} GFLOP/s "
                              f"({100 * k * rate(p, qkv_flops) / fma[t]:.0f}% of peak)")
            line += f"; {need(1.5)}, {need(2)}"
    print(line)
if mismatch:
    print("PARAMETER COUNTS DIFFER by more than 1%: " + "; ".join(mismatch))
    sys.exit(1)
PY

#!/usr/bin/env bash
# Runs qkv_bench_kernels and its PyTorch peer (bench/peer_torch.py, Debian's
# /usr/bin/python3) in one invocation and prints one table of medians: qkv, torch,
# the qkv/torch speed ratio, and the machine limits (FMA peak, stream triad) measured
# in the same run. Usage:
#   bench/run_kernels.sh [BUILD_DIR] [extra benchmark flags...]
# BUILD_DIR defaults to build/release (`cmake --workflow --preset release` builds it).
# REPS (default 5) sets the repetitions per benchmark (medians are over them).
# PEER=0 skips the torch peer. With --benchmark_filter=RE in the extra flags, only that
# group runs, and the peer runs the torch benchmarks paired with matching qkv ones.
# Groups run alternately (qkv GEMM, torch GEMM, qkv row kernels, torch row kernels,
# machine limits) so each pair is measured minutes apart at most.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/release}
shift || true
exe="$build/bench/qkv_bench_kernels"
[[ -x "$exe" ]] || { echo "no $exe: build the qkv_bench_kernels target first" >&2; exit 1; }
reps=${REPS:-5}
py=/usr/bin/python3
[[ -x $py ]] || py=python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

peer=${PEER:-1}
if [[ $peer != 0 ]] && ! /usr/bin/python3 -c 'import torch' 2>/dev/null; then
  echo "note: /usr/bin/python3 has no torch (Debian: apt install python3-torch); peer columns skipped" >&2
  peer=0
fi

user_filter=""
extra=()
for a in "$@"; do
  case $a in
    --benchmark_filter=*) user_filter=${a#--benchmark_filter=} ;;
    *) extra+=("$a") ;;
  esac
done
# group: "qkv filter;peer filter" (empty peer filter: no peer run)
if [[ -n $user_filter ]]; then
  groups=("$user_filter;$user_filter")
else
  groups=("Sgemm|Gemm;matmul"
          "Softmax|LayerNorm|CrossEntropy;softmax|layer_norm|cross_entropy"
          "StreamTriad|Memcpy|FmaPeak|ParallelFor;")
fi

cpu0=$(grep '^cpu ' /proc/stat)
load0=$(cut -d' ' -f1-3 /proc/loadavg)
start=$SECONDS
i=0
for g in "${groups[@]}"; do
  qf=${g%%;*} pf=${g#*;}
  echo "== qkv: $qf" >&2
  "$exe" --benchmark_filter="$qf" --benchmark_repetitions="$reps" \
         --benchmark_report_aggregates_only=true --benchmark_out="$tmp/qkv$i.json" \
         --benchmark_out_format=json "${extra[@]}" >&2
  if [[ $peer != 0 && -n $pf ]]; then
    echo "== torch: $pf" >&2
    /usr/bin/python3 bench/peer_torch.py --reps "$reps" --filter "$pf" --out "$tmp/torch$i.json"
  fi
  i=$((i + 1))
done
if [[ $peer != 0 && ! -e $tmp/torch0.json ]]; then  # header info even if no pair ran
  /usr/bin/python3 bench/peer_torch.py --info --out "$tmp/torch_info.json"
fi
cpu1=$(grep '^cpu ' /proc/stat)
load1=$(cut -d' ' -f1-3 /proc/loadavg)

$py - "$tmp" "$reps" "$((SECONDS - start))" "$load0" "$load1" "$cpu0" "$cpu1" <<'PY'
import glob, json, os, re, statistics, sys
sys.path.insert(0, "bench")  # the scripts run from the repository root
from run_context import omp_line, percent_of, print_env_and_load
tmp, reps, secs, load0, load1, cpu0, cpu1 = sys.argv[1:8]

qkv, ctx = {}, {}
for f in sorted(glob.glob(f"{tmp}/qkv*.json")):
    data = json.load(open(f))
    ctx = data["context"]
    for b in data["benchmarks"]:
        # Medians of the repetitions; with REPS=1 there are no aggregates, only the run.
        if b.get("aggregate_name") != "median" and b.get("run_type") != "iteration": continue
        name = re.sub(r"/(real_time|manual_time|iterations:\d+)", "", b["run_name"])
        unit = "GFLOP/s" if "GFLOP/s" in b else "GB/s" if "GB/s" in b else None
        scale = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}[b["time_unit"]]
        qkv[name] = (b["real_time"] * scale, b.get(unit) if unit else None, unit)
torch, tctx = {}, {}
for f in sorted(glob.glob(f"{tmp}/torch*.json")):
    data = json.load(open(f))
    tctx = data.get("context", tctx)
    for b in data.get("benchmarks", []):
        for q in b["pairs"]:
            torch[f"{q}/{b['args']}"] = (b["median_s"], b["rate"], b["unit"], b["kernel"])

print(f"cpu: {ctx.get('cpu_model', '?')}, {ctx.get('num_cpus', '?')} CPUs; "
      f"{ctx.get('cpu_features', '')}")
print(f"qkv: simd target {ctx.get('qkv_simd_target', '?')}; "
      f"gemm backend {ctx.get('qkv_gemm_backend', '?')}; "
      f"openblas: {ctx.get('openblas', '?')}")
if tctx:
    print(f"torch {tctx['torch_version']} ({tctx['python']}): BLAS_INFO={tctx['torch_blas_info']}"
          f", BLAS = {tctx.get('openblas_path', '?')} ({tctx['openblas']}); "
          f"CPU capability {tctx['torch_cpu_capability']}; parallel backend "
          f"{tctx['torch_parallel_backend']}; default threads: torch "
          f"{tctx['torch_default_threads']}, OpenBLAS {tctx.get('openblas_default_threads', '?')}"
          f"; allocator {tctx['allocator']}")
    print(omp_line(tctx))
    print("torch threads: torch.set_num_threads(t) + openblas_set_num_threads(t) per row")
else:
    print("torch: not run (no torch in /usr/bin/python3, or PEER=0)")
print_env_and_load(f"{reps} repetitions", secs, load0, load1, cpu0, cpu1)

def thr(n):
    m = re.search(r"threads:(\d+)", n)
    return m.group(1) if m else "?"
fma = {thr(n): v[1] for n, v in qkv.items() if n.split("/")[0] == "BM_FmaPeak"}  # not BM_FmaPeakAvx2
triad = {thr(n): v[1] for n, v in qkv.items() if n.startswith("BM_StreamTriad")}

def fmt_t(s):
    for u, f in (("s", 1), ("ms", 1e-3), ("us", 1e-6), ("ns", 1e-9)):
        if s >= f or u == "ns": return f"{s / f:8.3f} {u:<2}"

def shape(n):
    v = dict(re.findall(r"(\w+):(\d+)", n))
    v.pop("threads", None)
    if "gap_us" in v: return f"2 chunks, gap {v['gap_us']} us"
    if "chunk" in v:  # BM_LinearCrossEntropy: rows x dim x vocab, then the chunk size
        chunk = v.pop("chunk")
        return "x".join(v.values()) + f" c{chunk}"
    return "x".join(v.values()) or "-"  # m x n x k, rows x cols, ... in argument order

kernel = {"BM_OpenBlasSgemm": "openblas sgemm (raw)", "BM_QkvGemm": "gemm (auto)",
          "BM_QkvGemmOpenBlas": "gemm (openblas)",
          "BM_QkvGemmPortable": "gemm_portable", "BM_SoftmaxRows": "softmax_rows",
          "BM_LayerNormForward": "layer_norm fwd", "BM_LayerNormBackward": "layer_norm bwd",
          "BM_CrossEntropyForward": "cross_entropy fwd",
          "BM_CrossEntropyBackward": "cross_entropy bwd", "BM_StreamTriad": "stream triad",
          "BM_Memcpy": "memcpy", "BM_FmaPeak": "FMA peak", "BM_FmaPeakAvx2": "FMA peak (AVX2 loop)",
          "BM_ParallelForOverhead": "parallel_for latency"}
hdr = (f"{'kernel':<22}{'shape':<22}{'thr':>3}  {'qkv median':>11} {'rate':>16}  "
       f"{'torch median':>12} {'rate':>16}  {'qkv/torch':>9}  context")
print("\n" + hdr + "\n" + "-" * len(hdr))
for name, (t, rate, unit) in qkv.items():
    fam = name.split("/")[0]
    th = thr(name)
    r = f"{rate:8.2f} {unit:<7}" if rate else " " * 16
    p = torch.get(name)
    if p:
        pr = f"{fmt_t(p[0]):>12} {p[1]:8.2f} {p[2]:<7}  {p[0] / t:9.2f}"
    else:
        pr = f"{'':>12} {'':>16}  {'':>9}"
    note = ""
    if unit == "GFLOP/s" and fam != "BM_FmaPeak" and fma.get(th):
        note = percent_of(rate, fma[th], "FMA peak")
        if p: note += f" (torch {percent_of(p[1], fma[th], 'FMA peak')})"
    elif unit == "GB/s" and fam not in ("BM_StreamTriad", "BM_Memcpy") and triad.get(th):
        note = percent_of(rate, triad[th], "triad")
        if p: note += f" (torch {percent_of(p[1], triad[th], 'triad')})"
    if fam == "BM_QkvGemmOpenBlas":  # the wrapper's overhead, side by side
        raw = qkv.get(name.replace("BM_QkvGemmOpenBlas", "BM_OpenBlasSgemm"))
        if raw: note = f"wrapper/raw OpenBLAS = {raw[0] / t:.3f}; " + note
    if p and not note: note = p[3]
    print(f"{kernel.get(fam, fam):<22}{shape(name):<22}{th:>3}  {fmt_t(t):>11} {r}  {pr}  {note}")
print("\nqkv/torch = torch median time / qkv median time (> 1: qkv faster). Rates use the "
      "same FLOP/byte counts on both sides.")
if fma or triad:
    def limits(t):  # only what this run measured (a --benchmark_filter may skip some)
        parts = [f"FMA peak {fma[t]:.0f} GFLOP/s"] if t in fma else []
        return ", ".join(parts + ([f"triad {triad[t]:.1f} GB/s"] if t in triad else []))
    print("machine limits (this run): " + "; ".join(
        f"{t} thread{'s' if t != '1' else ''}: {limits(t)}" for t in sorted(set(fma) | set(triad))))
PY

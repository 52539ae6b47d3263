#!/usr/bin/env bash
# Runs qkv_bench_attention and its PyTorch peer (bench/peer_torch_attention.py, Debian's
# /usr/bin/python3 with torch 1.13) in one invocation and prints one table: fused
# scaled-dot attention (forward, forward+backward, causal and not), composed additive
# attention (forward+backward), qkv's gemm() at 1024³ as the yardstick, and the
# T = 16384 memory check. Usage:
#   bench/run_attention.sh [BUILD_DIR]        (BUILD_DIR defaults to build/release)
# REPS (default 3) repetitions per case (calls over 1 s get at most 3, over 4 s one).
# PEER=0 skips torch. TORCH_FULL=1 also runs torch at B=8, T=4096 (about 2-3 minutes
# more and ~10 GiB; skipped by default to keep the run near 5 minutes on 2 cores).
# MEMCHECK=0 skips the final T=16384 row (qkv only; ~30 s). THREADS1=0 skips the
# 1-thread subset. Groups alternate qkv / torch so each pair is measured minutes apart.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/release}
exe="$build/bench/qkv_bench_attention"
[[ -x "$exe" ]] || { echo "no $exe: build the qkv_bench_attention target first" >&2; exit 1; }
reps=${REPS:-3}
min_time=${MIN_TIME:-0.2}
py=/usr/bin/python3
[[ -x $py ]] || py=python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

peer=${PEER:-1}
if [[ $peer != 0 ]] && ! /usr/bin/python3 -c 'import torch' 2>/dev/null; then
  echo "note: /usr/bin/python3 has no torch (Debian: apt install python3-torch); peer columns skipped" >&2
  peer=0
fi

sdpa() {  # B T-list threads modes causal-list
  local b=$1 ts=$2 thr=$3 modes=$4 causals=$5 out=()
  for t in $ts; do for m in $modes; do for c in $causals; do
    out+=("sdpa:b=$b:h=8:t=$t:d=64:causal=$c:mode=$m:thr=$thr")
  done; done; done
  echo "${out[@]}"
}
Ts="128 256 512 1024 2048 4096"
# group: "qkv cases;torch cases"
groups=("gemm:n=1024:thr=2 $(sdpa 1 "$Ts" 2 "fwd fwdbwd" "0 1");gemm:n=1024:thr=2 $(sdpa 1 "$Ts" 2 "fwd fwdbwd" "0 1")")
if [[ ${TORCH_FULL:-0} == 1 ]]; then tts=$Ts; else tts="128 256 512 1024 2048"; fi
groups+=("$(sdpa 8 "$Ts" 2 "fwd fwdbwd" "0 1");$(sdpa 8 "$tts" 2 "fwd fwdbwd" "0 1")")
add=""
for t in 16 32 64 128; do add+="additive:b=32:t=$t:a=256:d=256:thr=2 "; done
groups+=("$add;$add")
if [[ ${THREADS1:-1} != 0 ]]; then
  # The 1-thread column issue 13 judges (fwd+bwd at T >= 512, B = 1 and B = 8).
  one="gemm:n=1024:thr=1 $(sdpa 1 "512 2048" 1 "fwd fwdbwd" 0) $(sdpa 8 "512 1024" 1 "fwdbwd" 0)"
  groups+=("$one;$one")
fi
[[ ${MEMCHECK:-1} != 0 ]] && groups+=("sdpa:b=1:h=8:t=16384:d=64:causal=0:mode=fwdbwd:thr=2;")

"$exe" --info > "$tmp/qkv_info.json"
[[ $peer != 0 ]] && /usr/bin/python3 bench/peer_torch_attention.py --info > "$tmp/torch_info.json"
cpu0=$(grep '^cpu ' /proc/stat)
load0=$(cut -d' ' -f1-3 /proc/loadavg)
start=$SECONDS
for g in "${groups[@]}"; do
  qc=${g%%;*} pc=${g#*;}
  echo "== qkv: $(wc -w <<< "$qc") cases" >&2
  # shellcheck disable=SC2086
  "$exe" --reps "$reps" --min-time "$min_time" $qc | tee -a "$tmp/qkv.jsonl" | cut -c1-110 >&2
  if [[ $peer != 0 && -n ${pc// /} ]]; then
    echo "== torch: $(wc -w <<< "$pc") cases" >&2
    # shellcheck disable=SC2086
    /usr/bin/python3 bench/peer_torch_attention.py --reps "$reps" --min-time "$min_time" $pc |
      tee -a "$tmp/torch.jsonl" | cut -c1-110 >&2
  fi
done
cpu1=$(grep '^cpu ' /proc/stat)
load1=$(cut -d' ' -f1-3 /proc/loadavg)

$py - "$tmp" "$reps" "$((SECONDS - start))" "$load0" "$load1" "$cpu0" "$cpu1" <<'PY'
import json, os, sys
sys.path.insert(0, "bench")  # the scripts run from the repository root
from run_context import omp_line, print_env_and_load
tmp, reps, secs, load0, load1, cpu0, cpu1 = sys.argv[1:8]

def load(name):
    p = os.path.join(tmp, name)
    return [json.loads(l) for l in open(p) if l.strip()] if os.path.exists(p) else []
ctx = json.load(open(f"{tmp}/qkv_info.json"))
tctx = json.load(open(f"{tmp}/torch_info.json")) if os.path.exists(f"{tmp}/torch_info.json") else {}
qkv = {r["case"]: r for r in load("qkv.jsonl")}
torch = {r["case"]: r for r in load("torch.jsonl")}

print(f"cpu: {ctx['cpu_model']}, {ctx['num_cpus']} CPUs; {ctx['cpu_features']}")
print(f"qkv: simd target {ctx['qkv_simd_target']}; gemm backend {ctx['qkv_gemm_backend']}; "
      f"openblas: {ctx['openblas']}")
if tctx:
    print(f"torch {tctx['torch_version']} ({tctx['python']}): BLAS_INFO={tctx['torch_blas_info']}, "
          f"BLAS = {tctx.get('openblas_path', '?')} ({tctx['openblas']}); CPU capability "
          f"{tctx['torch_cpu_capability']}; parallel backend {tctx['torch_parallel_backend']}; "
          f"mkldnn {tctx['torch_mkldnn']}; allocator {tctx['allocator']}; "
          f"is_causal == tril mask: {tctx['is_causal_matches_tril_mask']}")
    print("threads per row: qkv set_num_threads(t); torch.set_num_threads(t) + openblas_set_num_threads(t)")
    print(omp_line(tctx))
else:
    print("torch: not run (no torch in /usr/bin/python3, or PEER=0)")
print_env_and_load(f"{reps} repetitions (max 3 for calls > 1 s, 1 for > 4 s)", secs,
                   load0, load1, cpu0, cpu1)

def parse(name):
    kind, *rest = name.split(":")
    return kind, dict(kv.split("=") for kv in rest)
gemm = {parse(n)[1]["thr"]: r["gflops"] for n, r in qkv.items() if n.startswith("gemm") and "gflops" in r}
tgemm = {parse(n)[1]["thr"]: r["gflops"] for n, r in torch.items() if n.startswith("gemm") and "gflops" in r}

def ms(r):
    return f"{r['median_s'] * 1e3:10.2f}" if r and "median_s" in r else f"{'-' if not r else 'error':>10}"
def gf(r):
    return f"{r['gflops']:8.1f}" if r and "gflops" in r else f"{'-':>8}"
def mem(r):
    if not r or "extra_peak_kb" not in r: return f"{'-':>9}"
    return f"{r['extra_peak_kb'] / 1024:9.1f}" if r["extra_peak_kb"] >= 0 else f"{'n/a':>9}"

hdr = (f"{'case':<10}{'B':>3}{'T':>6} {'causal':>6} {'pass':<7}{'thr':>3} | {'qkv ms':>10} {'GFLOP/s':>8} "
       f"{'%sgemm':>6} {'+MiB':>9} | {'torch ms':>10} {'GFLOP/s':>8} {'+MiB':>9} | {'qkv/torch':>9} {'causal x':>8}")
print("\n" + hdr + "\n" + "-" * len(hdr))
for name, r in qkv.items():
    kind, a = parse(name)
    p = torch.get(name)
    thr = a["thr"]
    if kind == "gemm":
        lab, b, t, c, m = "gemm", "-", f"{a['n']}³", "-", "-"
    elif kind == "sdpa":
        lab, b, t, c, m = "sdpa", a["b"], a["t"], "yes" if a["causal"] == "1" else "no", \
            "fwd" if a["mode"] == "fwd" else "fwd+bwd"
    else:
        lab, b, t, c, m = "additive", a["b"], a["t"], "no", "fwd+bwd"
    pct = f"{100 * r['gflops'] / gemm[thr]:5.0f}%" if kind != "gemm" and "gflops" in r and thr in gemm else f"{'':>6}"
    ratio = f"{p['median_s'] / r['median_s']:9.2f}" if p and "median_s" in p and "median_s" in r else f"{'-':>9}"
    cx = ""
    if kind == "sdpa" and a["causal"] == "1":
        nc = qkv.get(name.replace("causal=1", "causal=0"))
        if nc and "median_s" in nc and "median_s" in r: cx = f"{nc['median_s'] / r['median_s']:8.2f}"
    print(f"{lab:<10}{b:>3}{t:>6} {c:>6} {m:<7}{thr:>3} | {ms(r)} {gf(r)} {pct} {mem(r)} | "
          f"{ms(p)} {gf(p)} {mem(p)} | {ratio} {cx:>8}")
print("""
ms: median wall time per call. GFLOP/s: scaled-dot forward = 4·B·H·T²·d (H=8, d=64), halved
for causal; forward+backward = 3.5 × forward (backward counted as 2.5 × forward, as the
FlashAttention papers do); additive = 3 × (4·B·T·D·A + 4·B·T²·A + 2·B·T²·D) (A = D = 256),
a convention, same on both sides. %sgemm: qkv's rate / qkv gemm() at 1024³ (same thread
count, this run). qkv/torch = torch time / qkv time (> 1: qkv faster). causal x = qkv
non-causal time / causal time. +MiB: peak RSS during the case beyond inputs and outputs
(fresh child process per case; VmHWM reset via /proc/self/clear_refs once inputs and
outputs exist; torch's outputs, which it allocates itself, are subtracted).""")
print("qkv: kernels::flash_attention_forward/_backward on preallocated [B·H, T, d] buffers; "
      "additive: attention::attend(ScoreKind::Additive) + autograd::backward(sum(context)). "
      "torch: F._scaled_dot_product_attention (math path) and the composed vᵀtanh(Wq+Uk+b).")
if gemm or tgemm:
    print("sgemm 1024³ (this run): " + "; ".join(
        f"{t} thread{'s' if t != '1' else ''}: qkv gemm() {gemm.get(t, float('nan')):.1f} GFLOP/s, "
        f"torch.matmul {tgemm.get(t, float('nan')):.1f}" for t in sorted(set(gemm) | set(tgemm))))
PY

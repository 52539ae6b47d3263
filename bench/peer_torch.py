#!/usr/bin/python3
"""PyTorch peer for qkv_bench_kernels: the same kernels at the same shapes, timed the
same way (wall clock, median over repetitions), counted with the same FLOPs / bytes, so
bench/run_kernels.sh can print qkv/torch ratios measured in one run.

Run it with Debian's interpreter (python3-torch), not a pyenv/venv python3:

    /usr/bin/python3 bench/peer_torch.py [--threads 1,2] [--reps 5] [--min-time 0.2]
                                          [--filter REGEX] [--cold-alloc] [--out FILE]

Writes JSON (stdout, or --out FILE): {"context": {...}, "benchmarks": [...]}, one entry
per (kernel, shape, threads) with every repetition's seconds per call, the median, and
the rate (GFLOP/s or GB/s) at the median. Entry names end in the same argument string
as qkv's ("m:1024/n:1024/k:1024/threads:1"), and "pairs" names the qkv benchmarks it
is the peer of.

Keep SHAPES below in sync with bench_gemm.cpp (Shapes) and bench_rowwise.cpp
(RowShapes, ce_spec, ce_targets).

Threads: torch.set_num_threads(t) sets ATen's OpenMP pool only; torch.matmul's float32
path calls the system BLAS (here OpenBLAS, pthread build), which keeps its own thread
count (all cores by default). So this script also calls openblas_set_num_threads(t) on
the OpenBLAS that torch loaded; otherwise "1 thread" matmul runs on 2 cores.

Allocation: qkv's bench writes into buffers allocated once (first-touch page faults
stay out of the timings). PyTorch ops allocate their outputs; glibc serves blocks over
32 MiB with fresh mmap()s, so every call of a 512 MiB op would page-fault its whole
output. By default this script turns that off (mallopt: no mmap, no trimming), so
freed blocks are reused as with a caching allocator; --cold-alloc keeps glibc's
defaults and measures the page faults too.
"""
import argparse
import ctypes
import json
import os
import re
import statistics
import sys
import time

# Before torch (and its libgomp) loads: idle OpenMP threads sleep instead of spinning.
# Spinning workers of the multi-threaded rows competed with OpenBLAS's threads and with
# any other process for 2 cores, making torch's 2-thread rows 2-5x slower than its
# 1-thread rows under load (bench/README.md). An explicit OMP_WAIT_POLICY is kept.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

# ---- shapes: same as qkv_bench_kernels ------------------------------------------------
THREADS = (1, 2)
GEMM_SHAPES = [(s, s, s) for s in (256, 512, 1024, 2048)] + [(4096, 1536, 512)]
ROW_SHAPES = [(4096, 512), (4096, 32000)]
LABEL_SMOOTHING = 0.1
LN_EPS = 1e-5
F32 = 4.0


def warm_allocator():
    """Keep freed memory in the heap so repeated large allocations reuse warm pages."""
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:
        return False
    M_TRIM_THRESHOLD, M_MMAP_MAX = -1, -4
    ok = libc.mallopt(M_MMAP_MAX, 0) == 1
    ok &= libc.mallopt(M_TRIM_THRESHOLD, 2**31 - 1) == 1  # an int: ~2 GiB, effectively never
    return bool(ok)


def find_openblas():
    """The OpenBLAS library this process has loaded (through torch), or None."""
    with open("/proc/self/maps") as f:
        paths = {line.split()[-1] for line in f if "openblas" in line and ".so" in line}
    for path in sorted(paths):
        try:
            lib = ctypes.CDLL(path)  # already loaded: returns the same handle
            lib.openblas_get_config.restype = ctypes.c_char_p
            lib.openblas_get_corename.restype = ctypes.c_char_p
            lib.openblas_set_num_threads.argtypes = [ctypes.c_int]
            return path, lib
        except (OSError, AttributeError):
            continue
    return None, None


def torch_context(torch, blas_path, blas):
    ctx = {"torch_version": torch.__version__, "python": sys.executable,
           "torch_default_threads": torch.get_num_threads(),
           "torch_default_interop_threads": torch.get_num_interop_threads(),
           "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY", "unset")}
    cfg = torch.__config__.show()
    m = re.search(r"BLAS_INFO=([^,]*)", cfg)
    ctx["torch_blas_info"] = m.group(1) if m else "?"
    m = re.search(r"CPU capability usage: (\S+)", cfg)
    ctx["torch_cpu_capability"] = m.group(1) if m else "?"
    m = re.search(r"ATen parallel backend: (.*)", torch.__config__.parallel_info())
    ctx["torch_parallel_backend"] = m.group(1).strip() if m else "?"
    ctx["torch_mkldnn"] = bool(torch.backends.mkldnn.is_available())
    if blas is not None:
        ctx["openblas_path"] = os.path.realpath(blas_path)
        ctx["openblas"] = (blas.openblas_get_config().decode() + " core=" +
                           blas.openblas_get_corename().decode())
        ctx["openblas_default_threads"] = blas.openblas_get_num_threads()
    else:
        ctx["openblas"] = "not loaded by torch (threads of torch's BLAS not controlled)"
    return ctx


def time_fn(fn, reps, min_time):
    """Seconds per call for each repetition: call fn until min_time has passed."""
    # Warm-up: caches, lazy init, and the heap: a large op's first calls page-fault its
    # outputs and temporaries into a growing heap (about 10 us a page on this VM), so
    # take at least 3 calls and 0.05 s before timing.
    n, end = 0, time.perf_counter() + 0.05
    while n < 3 or time.perf_counter() < end:
        fn()
        n += 1
    out, iters = [], []
    for _ in range(reps):
        n, start = 0, time.perf_counter()
        while True:
            fn()
            n += 1
            elapsed = time.perf_counter() - start
            if elapsed >= min_time:
                break
        out.append(elapsed / n)
        iters.append(n)
    return out, iters


def cases(torch):
    """(name, pairs, args, work, unit, make) with make() -> the callable to time.

    Each make() builds its inputs lazily, so only one shape's tensors are alive at a time.
    """
    F = torch.nn.functional
    gen = torch.Generator().manual_seed(1234)

    def uniform(*shape):  # like qkv's buffers: uniform in [-1, 1)
        return torch.rand(*shape, generator=gen) * 2 - 1

    def targets(rows, vocab):
        return (torch.arange(rows, dtype=torch.int64) * 7919) % vocab

    for t in THREADS:
        for m, n, k in GEMM_SHAPES:
            def make(m=m, n=n, k=k):
                a, b, c = uniform(m, k), uniform(k, n), torch.empty(m, n)
                return lambda: torch.matmul(a, b, out=c)
            yield ("torch.matmul", ["BM_QkvGemm", "BM_OpenBlasSgemm", "BM_QkvGemmOpenBlas",
                                   "BM_QkvGemmPortable"],
                   f"m:{m}/n:{n}/k:{k}/threads:{t}", t, 2.0 * m * n * k, "GFLOP/s", make)
    for t in THREADS:
        for rows, cols in ROW_SHAPES:
            args, e = f"rows:{rows}/cols:{cols}/threads:{t}", rows * cols

            def softmax(rows=rows, cols=cols):
                x = uniform(rows, cols)
                return lambda: torch.softmax(x, -1)

            def ln_fwd(rows=rows, cols=cols):
                x, w, b = uniform(rows, cols), uniform(cols), uniform(cols)
                return lambda: F.layer_norm(x, (cols,), w, b, LN_EPS)

            def ln_bwd(rows=rows, cols=cols):
                x, w, b, dy = uniform(rows, cols), uniform(cols), uniform(cols), uniform(rows, cols)
                _, mean, rstd = torch.ops.aten.native_layer_norm(x, [cols], w, b, LN_EPS)
                mask = [True, True, True]  # dx, dgamma, dbeta: as qkv's layer_norm_backward
                return lambda: torch.ops.aten.native_layer_norm_backward(
                    dy, x, [cols], mean, rstd, w, b, mask)

            def ce_fwd(rows=rows, cols=cols):
                x, tg = uniform(rows, cols), targets(rows, cols)
                return lambda: F.cross_entropy(x, tg, reduction="none",
                                               label_smoothing=LABEL_SMOOTHING)

            def ce_bwd(rows=rows, cols=cols):
                x, tg = uniform(rows, cols).requires_grad_(), targets(rows, cols)
                with torch.enable_grad():  # mean reduction: dloss = 1/rows per row, as qkv's
                    loss = F.cross_entropy(x, tg, label_smoothing=LABEL_SMOOTHING)
                return lambda: torch.autograd.grad(loss, x, retain_graph=True)

            yield ("torch.softmax", ["BM_SoftmaxRows"], args, t, 2 * F32 * e, "GB/s", softmax)
            yield ("F.layer_norm", ["BM_LayerNormForward"], args, t, 2 * F32 * e, "GB/s", ln_fwd)
            yield ("aten.native_layer_norm_backward", ["BM_LayerNormBackward"], args, t,
                   3 * F32 * e, "GB/s", ln_bwd)
            yield ("F.cross_entropy", ["BM_CrossEntropyForward"], args, t, F32 * e, "GB/s",
                   ce_fwd)
            yield ("F.cross_entropy.backward", ["BM_CrossEntropyBackward"], args, t,
                   2 * F32 * e, "GB/s", ce_bwd)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--threads", default=",".join(map(str, THREADS)))
    p.add_argument("--reps", type=int, default=int(os.environ.get("REPS", 5)))
    p.add_argument("--min-time", type=float, default=0.2, help="seconds per repetition")
    p.add_argument("--filter", default="", help="regex on 'name/args' or a qkv pair name")
    p.add_argument("--cold-alloc", action="store_true",
                   help="keep glibc's mmap for large blocks (page faults on every call)")
    p.add_argument("--info", action="store_true", help="print the context only")
    p.add_argument("--out", help="write JSON here instead of stdout")
    a = p.parse_args()

    warm = False if a.cold_alloc else warm_allocator()
    try:
        import torch
    except ImportError as e:
        print(json.dumps({"error": f"no torch in {sys.executable}: {e}"}))
        return 3
    blas_path, blas = find_openblas()
    ctx = torch_context(torch, blas_path, blas)
    ctx["allocator"] = "warm (mallopt: no mmap, no trim)" if warm else "glibc default"
    ctx["env"] = {k: os.environ[k] for k in ("OPENBLAS_CORETYPE", "OPENBLAS_NUM_THREADS",
                                             "OMP_NUM_THREADS", "ATEN_CPU_CAPABILITY")
                  if k in os.environ}
    result = {"context": ctx, "benchmarks": []}
    if not a.info:
        want = {int(x) for x in a.threads.split(",")}
        rx = re.compile(a.filter)
        torch.set_grad_enabled(False)
        for name, pairs, args, t, work, unit, make in cases(torch):
            if t not in want:
                continue
            if a.filter and not (rx.search(f"{name}/{args}") or
                                 any(rx.search(f"{q}/{args}") for q in pairs)):
                continue
            torch.set_num_threads(t)
            if blas is not None:
                blas.openblas_set_num_threads(t)
            fn = make()
            times, iters = time_fn(fn, a.reps, a.min_time)
            del fn
            med = statistics.median(times)
            result["benchmarks"].append({
                "name": f"{name}/{args}", "kernel": name, "pairs": pairs, "args": args,
                "threads": t, "times_s": times, "iterations": iters, "median_s": med,
                "rate": work / med / 1e9, "unit": unit})
            print(f"  {name}/{args}: {med * 1e3:.3f} ms", file=sys.stderr)
    text = json.dumps(result, indent=1)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text + "\n")
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/python3
"""PyTorch peer for qkv_bench_attention: the same attention cases, timed and measured
the same way, so bench/run_attention.sh prints qkv/torch ratios from one run.

Run it with Debian's interpreter (python3-torch 1.13), not a pyenv/venv python3:

    /usr/bin/python3 bench/peer_torch_attention.py [--reps 5] [--min-time 0.2] CASE...
    /usr/bin/python3 bench/peer_torch_attention.py --info

Prints one JSON line per case (same fields as qkv_bench_attention). CASE strings:
  sdpa:b=B:h=H:t=T:d=D:causal=0|1:mode=fwd|fwdbwd:thr=N
      F._scaled_dot_product_attention(q, k, v, None, 0.0, False, is_causal), float32,
      [B, H, T, D]; fwd under torch.no_grad(), fwdbwd with requires_grad q, k, v and
      out.backward(dout) (grads set to None before each call, like zero_grad).
      1.13's is_causal masks with tril(ones(L, S)): top-left aligned, the same as qkv's
      bottom-right alignment because Tq == Tk here (checked at start-up, --info).
  additive:b=B:t=T:a=A:d=D:thr=N
      composed Bahdanau attention, autograd: e = tanh(q W + k U + b) [B, Tq, Tk, A],
      s = e v, p = softmax(s), ctx = p V; ctx.sum().backward().
  gemm:n=N:thr=N   torch.matmul(a, b, out=c)

Each case runs in a fork()ed child (the parent imports torch but runs no parallel op,
so the child's OpenMP pool starts clean): peak memory = VmHWM after a clear_refs reset,
minus VmRSS once inputs are built, minus the bytes of the outputs torch allocates that
qkv's side preallocates (out; dq, dk, dv) so both sides report memory beyond
inputs/outputs. Threads: torch.set_num_threads(t) and openblas_set_num_threads(t) (torch's
float32 matmul calls the system OpenBLAS, which keeps its own thread count).
Allocation: mallopt (no mmap, no trim) as in peer_torch.py, so freed blocks are reused
like a caching allocator and repeated calls do not page-fault their outputs afresh.
"""
import argparse
import json
import math
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from peer_torch import find_openblas, torch_context, warm_allocator  # noqa: E402 (sets OMP_WAIT_POLICY)


def status_kb(key):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return -1


def reset_hwm():
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def time_fn(fn, reps, min_time):
    """Same policy as qkv_bench_attention: one warm-up call, then reps repetitions of
    >= min_time; calls over 1 s get at most 3 repetitions, over 4 s only 1."""
    t0 = time.perf_counter()
    fn()
    first = time.perf_counter() - t0
    if first > 4.0:
        reps = 1
    elif first > 1.0:
        reps = min(reps, 3)
    out = []
    for _ in range(reps):
        n, start = 0, time.perf_counter()
        while True:
            fn()
            n += 1
            el = time.perf_counter() - start
            if el >= min_time:
                break
        out.append(el / n)
    return out, first


def parse(name):
    kind, *rest = name.split(":")
    c = {"kind": kind}
    for kv in rest:
        k, v = kv.split("=")
        c[k] = v
    return c


def run_case(torch, blas, name, reps, min_time):
    F = torch.nn.functional
    c = parse(name)
    t = int(c["thr"])
    torch.set_num_threads(t)
    if blas is not None:
        blas.openblas_set_num_threads(t)
    gen = torch.Generator().manual_seed(1234)

    def uniform(*shape):
        return torch.rand(*shape, generator=gen) * 2 - 1

    out_bytes = 0
    if c["kind"] == "sdpa":
        b, h, T, d = (int(c[x]) for x in "bhtd")
        causal, bwd = c["causal"] == "1", c["mode"] == "fwdbwd"
        q, k, v = uniform(b, h, T, d), uniform(b, h, T, d), uniform(b, h, T, d)
        n = b * h * T * d
        if not bwd:
            def fn():
                with torch.no_grad():
                    F._scaled_dot_product_attention(q, k, v, None, 0.0, False, causal)
            out_bytes = 4 * n
        else:
            for x in (q, k, v):
                x.requires_grad_()
            dout = uniform(b, h, T, d)

            def fn():
                q.grad = k.grad = v.grad = None
                out, _ = F._scaled_dot_product_attention(q, k, v, None, 0.0, False, causal)
                out.backward(dout)
            out_bytes = 4 * 4 * n
        flops = 4.0 * b * h * T * T * d * (0.5 if causal else 1.0) * (3.5 if bwd else 1.0)
    elif c["kind"] == "additive":
        b, T, A, d = (int(c[x]) for x in "btad")
        q, k, val = uniform(b, T, d), uniform(b, T, d), uniform(b, T, d)
        W, U = uniform(d, A) / math.sqrt(d), uniform(d, A) / math.sqrt(d)
        bias, va = uniform(A) * 0.1, uniform(A) / math.sqrt(A)
        leaves = (q, k, val, W, U, bias, va)
        for x in leaves:
            x.requires_grad_()

        def fn():
            for x in leaves:
                x.grad = None
            e = torch.tanh((q @ W).unsqueeze(2) + (k @ U).unsqueeze(1) + bias)  # [B,Tq,Tk,A]
            p = torch.softmax(e @ va, -1)                                        # [B,Tq,Tk]
            (p @ val).sum().backward()
        out_bytes = 4 * sum(x.numel() for x in leaves)  # the grads (qkv counts them too)
        bt = float(b) * T
        flops = 3.0 * (4 * bt * d * A + 4 * bt * T * A + 2 * bt * T * d)
    elif c["kind"] == "gemm":
        n = int(c["n"])
        a, bb, cc = uniform(n, n), uniform(n, n), torch.empty(n, n)

        def fn():
            torch.matmul(a, bb, out=cc)
        flops = 2.0 * n ** 3
    else:
        raise SystemExit(f"unknown case {name}")
    base = status_kb("VmRSS")
    reset = reset_hwm()
    times, first = time_fn(fn, reps, min_time)
    peak = status_kb("VmHWM")
    med = statistics.median(times)
    extra = max(0, peak - base - out_bytes // 1024) if reset else -1
    return {"case": name, "median_s": med, "times_s": times, "first_s": first,
            "gflops": flops / med / 1e9, "base_rss_kb": base, "extra_peak_kb": extra,
            "outputs_subtracted_kb": out_bytes // 1024, "hwm_reset": reset}


def causal_check(torch):
    """1.13's is_causal against an explicit bottom-right (== top-left, Tq == Tk) mask."""
    F = torch.nn.functional
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.rand(1, 2, 7, 5, generator=g) for _ in range(3))
    a, _ = F._scaled_dot_product_attention(q, k, v, None, 0.0, False, True)
    s = (q @ k.transpose(-1, -2)) / math.sqrt(5)
    s = s.masked_fill(~torch.ones(7, 7, dtype=torch.bool).tril(), float("-inf"))
    return bool(torch.allclose(a, torch.softmax(s, -1) @ v, atol=1e-5))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--reps", type=int, default=int(os.environ.get("REPS", 5)))
    p.add_argument("--min-time", type=float, default=0.2)
    p.add_argument("--info", action="store_true")
    p.add_argument("cases", nargs="*")
    a = p.parse_args()
    warm = warm_allocator()
    import torch
    blas_path, blas = find_openblas()
    if a.info:
        ctx = torch_context(torch, blas_path, blas)
        ctx["allocator"] = "warm (mallopt: no mmap, no trim)" if warm else "glibc default"
        ctx["is_causal_matches_tril_mask"] = causal_check(torch)
        print(json.dumps(ctx))
        return 0
    status = 0
    for name in a.cases:
        sys.stdout.flush()
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            try:
                res = run_case(torch, blas, name, a.reps, a.min_time)
            except Exception as e:  # noqa: BLE001 -- report, do not hang the table
                res = {"case": name, "error": repr(e)}
            os.write(w, (json.dumps(res) + "\n").encode())
            os._exit(0)
        os.close(w)
        data = b""
        while True:
            chunk = os.read(r, 65536)
            if not chunk:
                break
            data += chunk
        os.close(r)
        _, ws = os.waitpid(pid, 0)
        if data.strip():
            print(data.decode().strip())
        else:
            print(json.dumps({"case": name, "error": f"child died (wait status {ws})"}))
            status = 1
        sys.stdout.flush()
    return status


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Flash attention against sgemm at 1 thread, in interleaved rounds (issue 13 item 3).

    bench/flash_vs_gemm.py ROUNDS LABEL=BINARY[,SIMD[,OPENBLAS_CORETYPE]] ...

Each round runs every configuration once: labels starting with "gemm" run
gemm:n=1024:thr=1, the others the flash cases (B=8, H=8, d=64, T = 256/512/1024 and
B=1, H=8, T=1024; fwd and fwdbwd; non-causal). BINARY is a qkv_bench_attention (e.g. one
built from an older commit, for before/after), SIMD its --simd, OPENBLAS_CORETYPE
OpenBLAS's core (SkylakeX: its AVX-512 kernels). Rates come from CPU time (the
benchmark's cpu_times_s), so that compiles beside the run cost less accuracy; each flash
rate is also given as a ratio to each gemm configuration. Two summaries: the median over
rounds of each round's rate and ratio (with the range), and the best repetition of all
rounds (min CPU time; the ratio of bests). Backward alone = (fwdbwd − fwd) time at
2.5 × the forward FLOPs, the benchmark's convention. Environment: REPS (3), MIN_TIME (0.2).

Example (before/after on one machine, ~6 min on 2 loaded cores):
    bench/flash_vs_gemm.py 5 gemm_hsw=$NEW gemm_skx=$NEW,,SkylakeX before=$OLD \\
        new_avx3=$NEW,AVX3 new_avx2=$NEW,AVX2
"""
import json
import os
import statistics as st
import subprocess
import sys

SHAPES = [(8, 256), (8, 512), (8, 1024), (1, 1024)]
FLASH = [f"sdpa:b={b}:h=8:t={t}:d=64:causal=0:mode={m}:thr=1" for b, t in SHAPES
         for m in ("fwd", "fwdbwd")]
GEMM = "gemm:n=1024:thr=1"


def flops(case):
    kv = dict(x.split("=") for x in case.split(":")[1:])
    if case.startswith("gemm"):
        return 2.0 * int(kv["n"]) ** 3
    b, h, t, d = (int(kv[x]) for x in "bhtd")
    return 4.0 * b * h * t * t * d * (3.5 if kv["mode"] == "fwdbwd" else 1.0)


def run(binary, simd, core, cases, reps, min_time):
    env = dict(os.environ)
    if core:
        env["OPENBLAS_CORETYPE"] = core
    cmd = [binary, "--reps", reps, "--min-time", min_time] + (["--simd", simd] if simd else [])
    out = subprocess.run(cmd + cases, env=env, capture_output=True, text=True, check=True).stdout
    return [json.loads(line) for line in out.splitlines()]


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    rounds = int(sys.argv[1])
    configs = []
    for arg in sys.argv[2:]:
        label, spec = arg.split("=", 1)
        parts = spec.split(",") + ["", ""]
        configs.append((label, parts[0], parts[1], parts[2]))
    reps, min_time = os.environ.get("REPS", "3"), os.environ.get("MIN_TIME", "0.2")
    per_round = {}  # (label, case) -> [cpu median seconds per call, one per round]
    every = {}      # (label, case) -> every repetition's CPU seconds per call
    for r in range(rounds):
        for label, binary, simd, core in configs:
            cases = [GEMM] if label.startswith("gemm") else FLASH
            for d in run(binary, simd, core, cases, reps, min_time):
                per_round.setdefault((label, d["case"]), []).append(d["cpu_median_s"])
                every.setdefault((label, d["case"]), []).extend(d["cpu_times_s"])
        print(f"round {r + 1} of {rounds} done", file=sys.stderr, flush=True)

    gemms = [c[0] for c in configs if c[0].startswith("gemm")]
    flashes = [c[0] for c in configs if not c[0].startswith("gemm")]

    def rates(label, case):
        return [flops(case) / s / 1e9 for s in per_round[(label, case)]]

    def bwd_rates(label, b, t):
        i = SHAPES.index((b, t)) * 2
        f, fb = per_round[(label, FLASH[i])], per_round[(label, FLASH[i + 1])]
        return [flops(FLASH[i]) * 2.5 / (y - x) / 1e9 for x, y in zip(f, fb)]

    print(f"{rounds} rounds, REPS {reps}, MIN_TIME {min_time}; GFLOP/s by CPU time")
    print("median over rounds [min-max]; ratio = median of the per-round ratios")
    g = {lab: rates(lab, GEMM) for lab in gemms}
    for lab in gemms:
        print(f"{lab:12s} {GEMM:48s} {st.median(g[lab]):6.1f} [{min(g[lab]):5.1f}-{max(g[lab]):5.1f}]")
    for lab in flashes:
        rows = [(c, rates(lab, c)) for c in FLASH]
        rows += [(f"bwd only b={b} t={t}", bwd_rates(lab, b, t)) for b, t in SHAPES]
        for name, v in rows:
            ratio = "  ".join(f"/{gl}: {st.median(x / y for x, y in zip(v, g[gl])):.2f}"
                              for gl in gemms)
            print(f"{lab:12s} {name:48s} {st.median(v):6.1f} [{min(v):5.1f}-{max(v):5.1f}]  {ratio}")

    print("\nbest repetition of all rounds (min CPU time); ratio of bests")
    gb = {lab: flops(GEMM) / min(every[(lab, GEMM)]) / 1e9 for lab in gemms}
    for lab in gemms:
        print(f"{lab:12s} {GEMM:48s} {gb[lab]:6.1f}")
    for lab in flashes:
        rows = [(c, flops(c) / min(every[(lab, c)]) / 1e9) for c in FLASH]
        for b, t in SHAPES:
            i = SHAPES.index((b, t)) * 2
            dt = min(every[(lab, FLASH[i + 1])]) - min(every[(lab, FLASH[i])])
            rows.append((f"bwd only b={b} t={t}", flops(FLASH[i]) * 2.5 / dt / 1e9))
        for name, v in rows:
            ratio = "  ".join(f"/{gl}: {v / gb[gl]:.2f}" for gl in gemms)
            print(f"{lab:12s} {name:48s} {v:6.1f}  {ratio}")


if __name__ == "__main__":
    main()

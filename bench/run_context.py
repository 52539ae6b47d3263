"""Header lines shared by bench/run_kernels.sh, run_attention.sh, run_training.sh and
run_decode.sh: the environment variables that change either side, and how busy the
machine was; and the rounds of run_training.sh's and run_decode.sh's rows (each row's
qkv and torch processes alternated ROUNDS times)."""
import os
import statistics

# Variables that change qkv's or PyTorch's kernels or thread counts when set.
ENV_VARS = ("OPENBLAS_CORETYPE", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "QKV_NUM_THREADS",
            "QKV_GEMM", "ATEN_CPU_CAPABILITY", "OMP_WAIT_POLICY")


# OpenBLAS 0.3.21's cores (OPENBLAS_CORETYPE values, upper case) by the widest FMA
# kernels they run.
AVX512_CORES = {"SKYLAKEX", "COOPERLAKE", "SAPPHIRERAPIDS"}
AVX2_CORES = AVX512_CORES | {"HASWELL", "ZEN"}


def cpu_flags(path="/proc/cpuinfo"):
    """The first 'flags' line of /proc/cpuinfo as a set (empty where there is none)."""
    try:
        with open(path) as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def forced_core_note(coretype, flags):
    """A warning when OPENBLAS_CORETYPE pins OpenBLAS below what this CPU runs: then every
    OpenBLAS product -- all of the PyTorch peer's -- runs narrower kernels than OpenBLAS
    would pick itself, and a qkv/torch ratio overstates qkv. None when unset or fitting.

    >>> forced_core_note("Haswell", {"avx2", "fma", "avx512f"}).split(": ")[1]
    'OPENBLAS_CORETYPE=Haswell runs AVX2 kernels on this AVX-512 CPU'
    >>> forced_core_note("SkylakeX", {"avx2", "fma", "avx512f"}) is None
    True
    >>> forced_core_note("Prescott", {"avx2", "fma"}).split(": ")[1]
    'OPENBLAS_CORETYPE=Prescott runs SSE kernels on this AVX2 CPU'
    >>> forced_core_note("Haswell", {"avx2", "fma"}) is None
    True
    >>> forced_core_note(None, {"avx512f"}) is None
    True
    """
    if not coretype:
        return None
    core = coretype.upper()
    if "avx512f" in flags and core not in AVX512_CORES:
        cpu, width = "AVX-512", ("AVX2" if core in AVX2_CORES else "SSE")
    elif {"avx2", "fma"} <= flags and core not in AVX2_CORES:
        cpu, width = "AVX2", "SSE"
    else:
        return None
    return (f"note: OPENBLAS_CORETYPE={coretype} runs {width} kernels on this {cpu} CPU: "
            "the PyTorch peer's GEMMs run below what OpenBLAS picks by itself, so qkv/torch "
            "overstates qkv; unset OPENBLAS_CORETYPE for the fair peer")


def print_env_and_load(reps_text, secs, load0, load1, cpu0, cpu1):
    """Prints the env line (and a note when OPENBLAS_CORETYPE handicaps the peer) and the
    run line (load average, CPU steal from /proc/stat 'cpu' lines taken before and after
    the run)."""
    env = [f"{k}={os.environ[k]}" for k in ENV_VARS if k in os.environ]
    print("env: " + (" ".join(env) if env else "OPENBLAS_CORETYPE, OMP_NUM_THREADS not set"))
    note = forced_core_note(os.environ.get("OPENBLAS_CORETYPE"), cpu_flags())
    if note and not os.environ.get("SIMD"):  # SIMD=AVX2 emulates a smaller CPU on purpose
        print(note)
    c0, c1 = [list(map(int, c.split()[1:])) for c in (cpu0, cpu1)]
    d = [b - a for a, b in zip(c0, c1)]
    steal = 100 * d[7] / max(1, sum(d)) if len(d) > 7 else 0
    print(f"run: {reps_text}, {secs} s; load average before {load0}, after {load1}; "
          f"CPU steal {steal:.1f}%")


def omp_line(tctx):
    """The peer's OpenMP wait policy, said once in every table's header."""
    policy = tctx.get("omp_wait_policy", "unset (spinning)")
    return (f"torch OpenMP: OMP_WAIT_POLICY={policy} for every row (the peer sets PASSIVE unless "
            "given: idle OpenMP threads of the multi-threaded rows sleep instead of spinning)")


def percent_of(rate, limit, what):
    """'NN% of WHAT', or a warning when the rate exceeds the limit measured in the same run:
    then the limit's measurement is wrong (e.g. an FMA loop that spilled registers), and a
    percentage above 100 would only repeat the error.

    >>> percent_of(46, 92, "FMA peak")
    '50% of FMA peak'
    >>> percent_of(70, 52, "FMA peak")
    'above the measured FMA peak: that measurement is wrong'
    """
    if rate > limit:
        return f"above the measured {what}: that measurement is wrong"
    return f"{100 * rate / limit:.0f}% of {what}"


def by_case(records):
    """case -> its records, one per round, in round order (a record's "round" when it has
    one, else the order the runs were written in), cases in first-seen order.

    >>> rows = by_case([{"case": "a", "round": 2}, {"case": "b"}, {"case": "a", "round": 1}])
    >>> [(c, [r.get("round") for r in v]) for c, v in rows.items()]
    [('a', [1, 2]), ('b', [None])]
    """
    out = {}
    for r in records:
        out.setdefault(r["case"], []).append(r)
    return {c: sorted(v, key=lambda r: r.get("round", 0)) for c, v in out.items()}  # stable


def pooled(runs, rate, medians, joined):
    """One row's rounds as one record: the first round's fields, the `medians` keys the
    medians over the rounds, the `joined` key's lists (per-window or per-pass times) of
    every round in one list; the first failed run (no `rate` key) if any failed, None
    without runs.

    >>> pooled([{"r": 1.0, "w": [1]}, {"r": 3.0, "w": [2]}, {"r": 2.0, "w": [3]}], "r", ["r"], "w")
    {'r': 2.0, 'w': [1, 2, 3]}
    >>> pooled([{"r": 1.0, "w": []}, {"error": "x"}], "r", ["r"], "w")
    {'error': 'x'}
    """
    if not runs:
        return None
    bad = next((r for r in runs if rate not in r), None)
    if bad:
        return bad
    out = dict(runs[0])
    for key in medians:
        out[key] = statistics.median(r[key] for r in runs)
    out[joined] = [v for r in runs for v in r.get(joined, [])]
    return out


def round_ratios(qkv_runs, torch_runs, rate):
    """qkv/torch of each round that both sides completed: round i's qkv process against
    round i's torch process, run right after it (the VM's speed drifts between minutes,
    so only such pairs are compared).

    >>> round_ratios([{"r": 4.0}, {"r": 6.0}, {"error": "x"}], [{"r": 2.0}, {"r": 2.0}, {"r": 1.0}], "r")
    [2.0, 3.0]
    """
    return [q[rate] / t[rate] for q, t in zip(qkv_runs, torch_runs) if rate in q and rate in t]

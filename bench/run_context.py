"""Header lines shared by bench/run_kernels.sh, run_attention.sh and run_training.sh: the
environment variables that change either side, and how busy the machine was."""
import os

# Variables that change qkv's or PyTorch's kernels or thread counts when set.
ENV_VARS = ("OPENBLAS_CORETYPE", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "QKV_NUM_THREADS",
            "QKV_GEMM", "ATEN_CPU_CAPABILITY", "OMP_WAIT_POLICY")


def print_env_and_load(reps_text, secs, load0, load1, cpu0, cpu1):
    """Prints the env line and the run line (load average, CPU steal from /proc/stat
    'cpu' lines taken before and after the run)."""
    env = [f"{k}={os.environ[k]}" for k in ENV_VARS if k in os.environ]
    print("env: " + (" ".join(env) if env else "OPENBLAS_CORETYPE, OMP_NUM_THREADS not set"))
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

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

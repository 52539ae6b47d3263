#!/usr/bin/env bash
# Runs qkv_bench_decode and its PyTorch peer (bench/peer_torch_decode.py, Debian's
# /usr/bin/python3 with torch 1.13) on the same trained model and the same source token
# ids, and prints one table: sentences/s and output tokens/s of greedy and beam-4
# decoding at 1 and 2 threads, qkv/torch, and the share of lines on which both sides
# output the same tokens.
# Usage:
#   bench/run_decode.sh [BUILD_DIR] [--model DIR] [--sentences N]
# BUILD_DIR defaults to build/release (needs qkv_bench_decode; training also tools/qkv/qkv).
# --model DIR: a model directory of `qkv train` (model.safetensors + vocab.spm). When DIR
# has no model.safetensors, a Transformer with `qkv train`'s defaults (E 256, 4 heads,
# 3 + 3 layers, FFN 1024, vocabulary 8000) is trained into it on the bundled Multi30k for
# TRAIN_TIME (default 5m; batches of 1024 words, warm-up 100) at 2 threads and kept (TRAIN_FLAGS: more `qkv train` flags,
# e.g. "--type rnn --attention additive"); without --model, into a temporary directory
# that is removed at the end.
# --sentences N (default 1000): the first N decodable lines of TEST_SET (default
# data/multi30k/test_2016_flickr.en.gz).
# Environment: REPS (default 3) timed passes per process, ROUNDS (default 3) qkv-then-torch
# process pairs per row, WARMUP (default 64) sentences decoded untimed first, THREADS
# (default "1 2"), BEAMS (default "1 4"), MINI_BATCH (default 32), PEER=0 (qkv only),
# MIN_AGREEMENT (default 99): exit status 1 when a greedy row's outputs agree on fewer
# lines (percent), the issue's acceptance.
# Each row runs qkv then torch, each in its own process (the model loaded outside the
# timing), ROUNDS times; its qkv/torch is the median of the rounds' ratios, each of two
# processes measured within a minute of each other (the VM's speed drifts between them).
set -euo pipefail
cd "$(dirname "$0")/.."
build=build/release model="" sentences=1000
while [[ $# -gt 0 ]]; do
  case $1 in
    --model) model=${2:?--model: missing DIR}; shift 2 ;;
    --sentences) sentences=${2:?--sentences: missing N}; shift 2 ;;
    -h|--help) sed -n '2,25p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "run_decode.sh: unknown flag $1 (see --help)" >&2; exit 2 ;;
    *) build=$1; shift ;;
  esac
done
[[ $sentences =~ ^[1-9][0-9]*$ ]] || { echo "run_decode.sh: --sentences '$sentences' is not a positive integer" >&2; exit 2; }
exe="$build/bench/qkv_bench_decode"
[[ -x "$exe" ]] || { echo "no $exe: build the qkv_bench_decode target first" >&2; exit 1; }
reps=${REPS:-3} rounds=${ROUNDS:-3} warmup=${WARMUP:-64} threads=${THREADS:-1 2} beams=${BEAMS:-1 4}
[[ $rounds =~ ^[1-9][0-9]*$ ]] || { echo "run_decode.sh: ROUNDS='$rounds' is not a positive integer" >&2; exit 2; }
mini_batch=${MINI_BATCH:-32} test_set=${TEST_SET:-data/multi30k/test_2016_flickr.en.gz}
py=/usr/bin/python3
[[ -x $py ]] || py=python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

peer=${PEER:-1}
# find_spec: without importing torch (a second or more per import).
if [[ $peer != 0 ]] && ! /usr/bin/python3 -c 'import importlib.util as u, sys; sys.exit(u.find_spec("torch") is None)' 2>/dev/null; then
  echo "note: /usr/bin/python3 has no torch (Debian: apt install python3-torch); peer columns skipped" >&2
  peer=0
fi

# The model: given, or trained here.
[[ -n $model ]] || model="$tmp/model"
if [[ ! -f $model/model.safetensors && ! -f $model ]]; then
  qkv="$build/tools/qkv/qkv"
  [[ -x $qkv ]] || { echo "no model in $model and no $qkv to train one: build the qkv_tool target" >&2; exit 1; }
  d=data/multi30k
  echo "== training a model (qkv train's defaults${TRAIN_FLAGS:+, then $TRAIN_FLAGS}) into $model for ${TRAIN_TIME:-5m}" >&2
  # Small batches and a short warm-up: the minutes buy a few hundred updates instead of
  # under a hundred, so the model ends most outputs with EOS instead of repeating words
  # up to the length limit.
  "$qkv" train --model "$model" --train-sets $d/train.en.gz $d/train.de.gz \
    --after "${TRAIN_TIME:-5m}" --mini-batch-words 1024 --warmup 100 --threads 2 \
    --valid-freq 0 --disp-seconds 60 ${TRAIN_FLAGS:-} >&2
fi

# The same source ids for both sides (qkv's vocabulary; the peer needs no SentencePiece).
gzip -cdf "$test_set" | "$exe" --model "$model" --encode --lines "$sentences" > "$tmp/ids.txt"
"$exe" --info > "$tmp/qkv_info.json"
flags=(--model "$model" --ids "$tmp/ids.txt" --reps "$reps" --warmup "$warmup" --mini-batch "$mini_batch")
cpu0=$(grep '^cpu ' /proc/stat)
load0=$(cut -d' ' -f1-3 /proc/loadavg)
start=$SECONDS
# Each row alternates the two sides ROUNDS times (qkv, torch, qkv, torch, ...): this VM's
# speed drifts by 20-40 % over minutes, so a ratio is taken only between a qkv process and
# the torch process right after it, and the row reports the median of those ratios.
for t in $threads; do
  for k in $beams; do
    for ((r = 1; r <= rounds; ++r)); do
      echo "== qkv beam $k, $t thread(s), round $r of $rounds" >&2
      "$exe" "${flags[@]}" --beam "$k" --threads "$t" --out "$tmp/qkv.b$k.t$t.r$r.txt" |
        sed "s/^{/{\"round\": $r, /" | tee -a "$tmp/qkv.jsonl" >&2
      if [[ $peer != 0 ]]; then
        echo "== torch beam $k, $t thread(s), round $r of $rounds" >&2
        /usr/bin/python3 bench/peer_torch_decode.py "${flags[@]}" --beam "$k" --threads "$t" \
          --out "$tmp/torch.b$k.t$t.r$r.txt" | sed "s/^{/{\"round\": $r, /" |
          tee -a "$tmp/torch.jsonl" | cut -c1-200 >&2
      fi
    done
  done
done
cpu1=$(grep '^cpu ' /proc/stat)
load1=$(cut -d' ' -f1-3 /proc/loadavg)

$py - "$tmp" "$model" "$test_set" "$reps" "$warmup" "$((SECONDS - start))" "$load0" "$load1" \
  "$cpu0" "$cpu1" "${MIN_AGREEMENT:-99}" "$rounds" <<'PY'
import json, os, statistics, sys
sys.path.insert(0, "bench")  # the scripts run from the repository root
from run_context import by_case, omp_line, pooled, print_env_and_load, round_ratios
tmp, model, test_set, reps, warmup, secs, load0, load1, cpu0, cpu1, min_agree, rounds = sys.argv[1:13]

def load(name):
    p = os.path.join(tmp, name)
    return [json.loads(l) for l in open(p) if l.strip()] if os.path.exists(p) else []
def lines(name):
    p = os.path.join(tmp, name)
    return open(p).read().split("\n")[:-1] if os.path.exists(p) else None
ctx = json.load(open(f"{tmp}/qkv_info.json"))
qkv_runs, torch_runs = by_case(load("qkv.jsonl")), by_case(load("torch.jsonl"))
def pooled_row(runs):
    """One row's rounds as one record (run_context.pooled): sent/s and tok/s the medians
    over the rounds, the passes of every round pooled for the spread, the highest peak."""
    out = pooled(runs, "sentences_per_s", ("sentences_per_s", "tokens_per_s"), "seconds")
    if out is None or "sentences_per_s" not in out: return out
    out["peak_rss_kb"] = max(r.get("peak_rss_kb", 0) for r in runs)
    if all("search_s" in r for r in runs):
        out["search_s"] = statistics.median(r["search_s"] for r in runs)
    return out
qkv = {case: pooled_row(runs) for case, runs in qkv_runs.items()}
torch = {case: pooled_row(runs) for case, runs in torch_runs.items()}
tctx = next((r["context"] for r in torch.values() if "context" in r), {})  # every row has it

print(f"cpu: {ctx['cpu_model']}, {ctx['num_cpus']} CPUs; {ctx['cpu_features']}")
print(f"qkv: simd target {ctx['qkv_simd_target']}; gemm backend {ctx['qkv_gemm_backend']}; "
      f"openblas: {ctx['openblas']}")
if tctx:
    print(f"torch {tctx['torch_version']} ({tctx['python']}): BLAS_INFO={tctx['torch_blas_info']}, "
          f"BLAS = {tctx.get('openblas_path', '?')} ({tctx['openblas']}); CPU capability "
          f"{tctx['torch_cpu_capability']}; parallel backend {tctx['torch_parallel_backend']}; "
          f"allocator {tctx['allocator']}")
    print("threads per row: qkv set_num_threads(t); torch.set_num_threads(t) + openblas_set_num_threads(t)")
    print(omp_line(tctx))
else:
    print("torch: not run (no torch in /usr/bin/python3, or PEER=0)")
if "model" in tctx:
    c, n = tctx["model"]["config"], tctx["model"]["params"]
    if c["type"] == "transformer":
        sizes = (f"E {c['dim_emb']}, {c['heads']} heads, {c['enc_depth']} + {c['dec_depth']} "
                 f"layers, FFN {c['dim_ffn']}")
    else:
        sizes = (f"{c['cell']}, attention {c['attention']}, E {c['dim_emb']}, H {c['dim_rnn']}, "
                 f"{c['enc_depth']} + {c['dec_depth']} layers")
    print(f"model: {model}: {c['type']}, {sizes}, vocabulary {c['vocab_size']}, {n:,} parameters")
else:
    print(f"model: {model}")
ids = lines("ids.txt")
print(f"input: the first {len(ids)} decodable lines of {test_set}, "
      f"{sum(len(l.split()) for l in ids)} source tokens (+ EOS each); batches of "
      f"{next(iter(qkv.values()), {}).get('mini_batch', '?')} sentences sorted by length")
print_env_and_load(f"{min(int(warmup), len(ids))} sentences untimed, then {reps} timed passes "
                   f"over all, medians; each row {rounds} round(s) of one qkv then one torch "
                   "process",
                   secs, load0, load1, cpu0, cpu1)

def spread(r):  # (max - min) / median of the passes' seconds, a noise figure
    v = r["seconds"]
    return f"{100 * (max(v) - min(v)) / statistics.median(v):4.0f}%"
def cols(r, w):
    if not r: return f"{'-':>{w}} {'-':>8} {'-':>6}"
    if "error" in r: return f"{'error':>{w}} {'':>8} {'':>6}"
    return f"{r['sentences_per_s']:{w}.1f} {r['tokens_per_s']:8.0f} {spread(r):>6}"

hdr = (f"{'search':<7}{'thr':>3} | {'qkv sent/s':>10} {'tok/s':>8} {'spread':>6} | "
       f"{'torch sent/s':>12} {'tok/s':>8} {'spread':>6} {'search':>6} | {'qkv/torch':>9} "
       f"{'rounds':>11} | {'identical':>9}")
print("\n" + hdr + "\n" + "-" * len(hdr))
failed = []
agree_of = {}
for name, r in qkv.items():
    beam, thr = name[len("beam"):].split(":thr=")
    p = torch.get(name)
    # Each round's ratio is of two processes run one after the other; the row's is their
    # median, and "rounds" their range.
    pairs = round_ratios(qkv_runs[name], torch_runs.get(name, []), "sentences_per_s")
    ratio = f"{statistics.median(pairs):9.2f}" if pairs else f"{'-':>9}"
    span = f"{min(pairs):.2f}-{max(pairs):.2f}" if len(pairs) > 1 else "-"
    a, b = lines(f"qkv.b{beam}.t{thr}.r1.txt"), lines(f"torch.b{beam}.t{thr}.r1.txt")
    agree = "-"
    if a is not None and b is not None and len(a) == len(b) and a:
        same = sum(x == y for x, y in zip(a, b))
        agree_of[name] = 100 * same / len(a)
        agree = f"{agree_of[name]:.1f}%"
        if beam == "1" and agree_of[name] < float(min_agree):
            failed.append(f"greedy at {thr} thread(s): {agree_of[name]:.1f}% < {min_agree}%")
    share = (f"{100 * p['search_s'] / statistics.median(p['seconds']):5.0f}%"
             if p and "search_s" in p else f"{'-':>6}")
    label = "greedy" if beam == "1" else f"beam {beam}"
    print(f"{label:<7}{thr:>3} | {cols(r, 10)} | {cols(p, 12)} {share} | {ratio} {span:>11} | "
          f"{agree:>9}")
    for err in (r.get("error"), (p or {}).get("error")):
        if err: print(f"  error: {err}")
def peak(r):
    return f"{r['peak_rss_kb'] / 1024:.0f}" if r and "peak_rss_kb" in r else "-"
print("peak RSS of each run's whole process, MiB, qkv | torch (torch's includes its import): " +
      "; ".join(f"{name} {peak(r)} | {peak(torch.get(name))}" for name, r in qkv.items()))
print("""
sent/s, tok/s: sentences and output tokens (EOS not counted; each side its own outputs)
per second of wall time for the whole input, median over a process's passes, then over the
rounds; spread: (max - min) / median of every pass of the row. torch search: the share of
its time outside the model (the Python search loop). qkv/torch: the median over the rounds
of qkv sent/s / torch sent/s, each round's two processes run one after the other (> 1:
qkv faster); rounds: the lowest and highest of those ratios. identical: lines on which
qkv's and torch's output ids are the same (round 1's outputs).""")
# qkv's outputs must not depend on the thread count (bitwise identical results).
for name in qkv:  # and not on the round
    beam, thr = name[len("beam"):].split(":thr=")
    outs = [lines(f"qkv.b{beam}.t{thr}.r{r}.txt") for r in range(1, int(rounds) + 1)]
    if any(o is not None for o in outs) and len({tuple(o or ()) for o in outs}) > 1:
        print(f"qkv {name}: outputs DIFFER between rounds")
        failed.append(f"qkv {name} outputs differ between rounds")
for k in sorted({n.split(":")[0] for n in qkv}):
    outs = {n: lines(f"qkv.b{k[4:]}.t{n.split('=')[1]}.r1.txt") for n in qkv if n.startswith(k + ":")}
    if len(outs) > 1:
        same = len({tuple(v) for v in outs.values()}) == 1
        print(f"qkv {k}: outputs {'identical' if same else 'DIFFER'} across thread counts "
              f"{', '.join(n.split('=')[1] for n in outs)}")
        if not same: failed.append(f"qkv {k} outputs differ across thread counts")
if failed:
    print("FAILED: " + "; ".join(failed))
    sys.exit(1)
PY

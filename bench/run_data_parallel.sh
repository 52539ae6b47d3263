#!/usr/bin/env bash
# Data-parallel throughput on one machine: the same global batches trained by
#   1 rank  x 2 threads x --accumulate 2   (one process, both cores)
#   2 ranks x 1 thread  x --accumulate 1   (mpirun, loopback TCP, ordered exchange
#                                           overlapping the backward pass, the default)
#   the same with --exchange-overlap off  (the exchange after the backward pass)
#   2 ranks x 1 thread, --gradient-exchange allreduce (overlapped)
# for the benchmarks' Transformer (d=256, 4 heads, 3+3 layers, FFN 1024) and RNN (bi-GRU
# 256 + GRU 256, additive attention), on the first LINES pairs of Multi30k; tokens/s of
# updates 2..U (the first one warms up), median and range of --reps runs interleaved, rank
# 0's exchange time per update, and whether the ordered runs end bitwise equal.
# Then qkv_bench_exchange: the exchange alone for each model's parameter count.
#
# usage: bench/run_data_parallel.sh [--build build/release] [--updates 8] [--lines 8000]
#                                   [--reps 3]
set -u -o pipefail
BUILD=build/release UPDATES=8 LINES=8000 REPS=3
while (($#)); do
  case $1 in
    --build) BUILD=$2; shift 2 ;;
    --updates) UPDATES=$2; shift 2 ;;
    --lines) LINES=$2; shift 2 ;;
    --reps) REPS=$2; shift 2 ;;
    *) echo "run_data_parallel.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
Q=$BUILD/tools/qkv/qkv EX=$BUILD/bench/qkv_bench_exchange
[[ -x $Q && -x $EX ]] || { echo "build $Q and $EX first" >&2; exit 2; }
WORK=$(mktemp -d "${TMPDIR:-/tmp}/qkv_dp_bench.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
export OMPI_MCA_btl=self,tcp OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo
MPIRUN=(timeout -k 5 1800 mpirun --oversubscribe --bind-to none)
(($(id -u) == 0)) && MPIRUN+=(--allow-run-as-root)

D=data/multi30k
zcat $D/train.en.gz | head -n "$LINES" >"$WORK/train.en"
zcat $D/train.de.gz | head -n "$LINES" >"$WORK/train.de"
"$Q" vocab --train-sets "$WORK/train.en" "$WORK/train.de" --vocab-size 8000 \
  -o "$WORK/vocab.spm" 2>/dev/null || { echo "vocab failed" >&2; exit 1; }
COMMON=(--train-sets "$WORK/train.en" "$WORK/train.de" --vocab "$WORK/vocab.spm"
  --mini-batch-words 2048 --valid-freq 0 --save-freq 0 --disp-freq "$UPDATES"
  --after "${UPDATES}u" --seed 1)
declare -A MODEL=(
  [transformer]="--type transformer --dim-emb 256 --heads 4 --dim-ffn 1024"
  [rnn]="--type rnn --attention additive --dim-emb 256 --dim-rnn 256"
)
# tps LOG: tokens/s of the last progress line (updates 2..U).
tps() { grep -o '[0-9]* tokens/s' "$1" | tail -1 | cut -d' ' -f1; }
# xms LOG: rank 0's exchange time per update (what the backward pass did not hide).
xms() { grep '^gradient exchange:' "$1" | grep -o '[0-9.]* ms per update' | cut -d' ' -f1; }
# stats V...: "median (min-max)" of the values.
stats() { printf '%s\n' "$@" | sort -n | awk '{v[NR]=$1} END {printf "%s (%s-%s)", v[int((NR+1)/2)], v[1], v[NR]}'; }
# The layouts, each run REPS times, interleaved (a disturbance hits all of them alike).
LAYOUTS=(1x2 2x1 2x1.noovl ar)
for name in transformer rnn; do
  # shellcheck disable=SC2206
  m=(${MODEL[$name]})
  declare -A T=() X=()
  for ((rep = 1; rep <= REPS; ++rep)); do
    for layout in "${LAYOUTS[@]}"; do
      dir=$WORK/$name.$layout.$rep
      case $layout in
        1x2) "$Q" train --model "$dir" "${COMMON[@]}" "${m[@]}" --threads 2 --accumulate 2 \
          2>"$dir.log" ;;
        2x1) "${MPIRUN[@]}" -n 2 "$Q" train --model "$dir" "${COMMON[@]}" "${m[@]}" --threads 1 \
          2>"$dir.log" ;;
        2x1.noovl) "${MPIRUN[@]}" -n 2 "$Q" train --model "$dir" "${COMMON[@]}" "${m[@]}" \
          --threads 1 --exchange-overlap off 2>"$dir.log" ;;
        ar) "${MPIRUN[@]}" -n 2 "$Q" train --model "$dir" "${COMMON[@]}" "${m[@]}" --threads 1 \
          --gradient-exchange allreduce 2>"$dir.log" ;;
      esac
      T[$layout]+="$(tps "$dir.log") "
      X[$layout]+="$(xms "$dir.log") "
    done
  done
  params=$(grep -o '[0-9]* parameters' "$WORK/$name.1x2.1.log" | cut -d' ' -f1)
  same=yes
  for ((rep = 1; rep <= REPS; ++rep)); do
    for layout in 2x1 2x1.noovl; do
      cmp -s "$WORK/$name.1x2.1/model.safetensors" "$WORK/$name.$layout.$rep/model.safetensors" ||
        same=no
    done
  done
  # shellcheck disable=SC2086
  {
    echo "$name ($params parameters, $UPDATES updates of 2 x 2048-token micro-batches;" \
      "tokens/s median (min-max) of $REPS runs):"
    echo "  1 rank x 2 threads        $(stats ${T[1x2]})"
    echo "  2 ranks x 1 thread, ordered, overlapped  $(stats ${T[2x1]}) tokens/s;" \
      "exchange left after backward $(stats ${X[2x1]}) ms per update"
    echo "  2 ranks x 1 thread, ordered, not overlapped  $(stats ${T[2x1.noovl]}) tokens/s;" \
      "exchange $(stats ${X[2x1.noovl]}) ms per update"
    echo "  2 ranks x 1 thread, allreduce, overlapped  $(stats ${T[ar]}) tokens/s;" \
      "exchange left $(stats ${X[ar]}) ms per update"
    echo "  ordered runs bitwise equal to 1 rank x 2 threads (both overlaps): $same"
  }
  # The scaling model's compute input: seconds per micro-batch on this machine (2 threads).
  seen=$(grep -ao '"tokens_seen":"[0-9]*"' "$WORK/$name.1x2.1/train_state.safetensors" | head -1 |
    tr -dc '0-9')
  python3 -c "t = $seen / (2 * $UPDATES); print(f'  {t:.0f} tokens per micro-batch: t_c =', \
    f'{t / $(tps "$WORK/$name.1x2.1.log"):.2f} s per micro-batch at 2 threads')"
  "${MPIRUN[@]}" -n 2 "$EX" --params "$params" --reps 10
  unset T X
done

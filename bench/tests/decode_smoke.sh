#!/usr/bin/env bash
# ctest bench.run_decode.Smoke: bench/run_decode.sh end to end on the committed
# compatibility models (tests/compat/models), 5 sentences, 1 thread, one pass: the peer
# must load qkv's weights and output the same ids on every line (MIN_AGREEMENT=100 for
# greedy; beam 4 checked here), and the table must print.
# Exit 77 (ctest: skipped) without torch in /usr/bin/python3.
#   bench/tests/decode_smoke.sh BUILD_DIR
set -euo pipefail
build=$(cd "${1:?usage: decode_smoke.sh BUILD_DIR}" && pwd)
cd "$(dirname "$0")/../.."
if ! /usr/bin/python3 -c 'import importlib.util as u, sys; sys.exit(u.find_spec("torch") is None)' 2>/dev/null; then
  echo "skipped: /usr/bin/python3 has no torch (python3-torch is a benchmark peer only)"
  exit 77
fi
# The Transformer greedy and beam 4, two rounds each (the rows' ratio is the median of the
# rounds'); the Bahdanau RNN beam 4 only, one round (each torch process costs an import of
# about a second; the beam rows also exercise the state reordering).
for run in "transformer:2:1 4" "rnn-additive:1:4"; do
  IFS=: read -r model rounds beams <<<"$run"
  out=$(REPS=1 ROUNDS=$rounds WARMUP=2 THREADS=1 BEAMS="$beams" MIN_AGREEMENT=100 \
        bench/run_decode.sh "$build" --model tests/compat/models/$model --sentences 5 2>&1) || {
    echo "$out"; echo "FAIL: run_decode.sh on $model exited non-zero"; exit 1; }
  echo "$out" | sed -n '/^search/,/^$/p'
  for k in $beams; do
    label="beam $k"
    [[ $k == 1 ]] && label=greedy
    line=$(echo "$out" | grep -E "^$label +1 \|") || {
      echo "$out"; echo "FAIL: no '$label' row ($model)"; exit 1; }
    [[ $line == *" 100.0%" ]] || { echo "FAIL: $model $label: outputs differ: $line"; exit 1; }
    # Two rounds: the ratio's range (low-high) is printed; one round: "-".
    if [[ $rounds -gt 1 ]]; then
      [[ $line =~ \ [0-9.]+-[0-9.]+\ \| ]] || { echo "FAIL: $model $label: no ratio range: $line"; exit 1; }
    fi
  done
done
echo "ok"

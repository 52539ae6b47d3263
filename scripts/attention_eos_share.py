#!/usr/bin/env python3
"""How much attention goes to the source </s>, and how peaked it is, per head.

Translates the first COUNT lines of SRC with `qkv translate --alignment soft` (beam 5)
and reads the soft alignments: per target word its attention over the source words
(subword pieces summed). The source </s> is not a word, so each row sums to 1 minus the
weight on </s>; the script reports, over every target word, the mean of that remainder
("eos") and the mean largest weight on one source word ("peak": 1 = all on one word).
For a Transformer (--layers L --heads H) every decoder layer's every head is measured.

Usage: attention_eos_share.py QKV MODEL SRC COUNT [--layers L --heads H]
Example (docs/experiments.md, item 5):
  scripts/attention_eos_share.py build/release/tools/qkv/qkv \\
      runs/experiments/2-variants/models/transformer-h4 test.en 200 --layers 3 --heads 4
"""
import argparse
import subprocess


def measure(qkv, model, lines, layer=None, head=None):
    args = [qkv, "translate", "--model", model, "--alignment", "soft", "--threads", "1",
            "--beam-size", "5"]
    if layer is not None:
        args += ["--alignment-layer", str(layer), "--alignment-head", str(head)]
    out = subprocess.run(args, input="\n".join(lines) + "\n", capture_output=True, text=True,
                         check=True).stdout
    eos = peak = 0.0
    rows = 0
    for line in out.splitlines():
        if "|||" not in line:
            continue
        for row in line.split("|||", 1)[1].split():
            weights = [float(x) for x in row.split(",")]
            eos += 1.0 - sum(weights)
            peak += max(weights)
            rows += 1
    if rows == 0:  # every translation empty (an untrained model), or no attention
        return None
    return eos / rows, peak / rows, rows


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("qkv")
    p.add_argument("model")
    p.add_argument("src")
    p.add_argument("count", type=int)
    p.add_argument("--layers", type=int, default=0)
    p.add_argument("--heads", type=int, default=0)
    a = p.parse_args()
    with open(a.src, encoding="utf-8") as f:
        lines = [l.rstrip("\n") for l in f][: a.count]
    if a.layers == 0:
        m = measure(a.qkv, a.model, lines)
        print(f"{a.model}: " + ("no target words to measure" if m is None else
                                f"eos {m[0]:.3f} peak {m[1]:.3f} ({m[2]} target words)"))
        return
    print(f"{a.model}: per layer and head, eos share / peak weight")
    for layer in range(a.layers):
        cells = []
        for head in range(a.heads):
            m = measure(a.qkv, a.model, lines, layer, head)
            cells.append(f"h{head} -" if m is None else f"h{head} {m[0]:.2f}/{m[1]:.2f}")
        print(f"layer {layer}: " + "  ".join(cells))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Translate a sentence with a model trained by `qkv demo`, draw its attention as a heatmap
(PNG, matplotlib), and compute attention on arrays with qkv.attention.attend next to numpy's
own formula.

    cmake --workflow --preset release && (cd build/release && tools/qkv/qkv demo)
    PYTHONPATH=build/release/python python3 examples/attention_in_python.py \
        [--model build/release/qkv-demo/models/transformer] [--out attention.png] [SENTENCE]
"""

import argparse
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only: no display needed
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

import qkv  # noqa: E402


def draw(maps, layer, title, path):
    """The mean over heads of one layer's cross-attention, target rows x source columns."""
    weights = maps.weights[layer].mean(axis=0)
    fig, ax = plt.subplots(figsize=(1 + 0.45 * len(maps.source_tokens),
                                    1 + 0.4 * len(maps.target_tokens)))
    image = ax.imshow(weights, cmap="Blues", vmin=0, vmax=1)
    fig.colorbar(image, ax=ax, shrink=0.6, label="attention weight")
    ax.set_xticks(range(len(maps.source_tokens)), maps.source_tokens, rotation=60, ha="right")
    ax.set_yticks(range(len(maps.target_tokens)), maps.target_tokens)
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def attention_on_arrays():
    """Scaled-dot attention with padding: qkv next to numpy's softmax(q k^T / sqrt(d)) v."""
    rng = np.random.default_rng(0)
    q = rng.standard_normal((1, 2, 4))
    k = rng.standard_normal((1, 3, 4))
    v = rng.standard_normal((1, 3, 2))
    context, weights = qkv.attention.attend(q, k, v, kind="scaled_dot", key_lengths=[2])
    scores = q @ k.transpose(0, 2, 1) / np.sqrt(4)
    scores[..., 2:] = -np.inf  # the padded key
    ref = np.exp(scores - scores.max(-1, keepdims=True))
    ref /= ref.sum(-1, keepdims=True)
    print("qkv.attention.attend weights:\n", weights[0].round(4))
    print("numpy's formula:\n", ref[0].round(4))
    print("largest difference in the context:", float(np.abs(context - ref @ v).max()))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("sentence", nargs="?", default="A little girl is climbing a tree.")
    parser.add_argument("--model", default="build/release/qkv-demo/models/transformer",
                        help="a model directory written by `qkv train` or `qkv demo`")
    parser.add_argument("--out", default="attention.png", help="the PNG to write")
    args = parser.parse_args()

    translator = qkv.Translator(args.model)
    result = translator.translate([args.sentence], beam_size=5, return_attention=True)[0]
    if not result.ok:
        raise SystemExit(f"not translated: {result.skipped}")
    best = result.hypotheses[0]
    maps = best.attention
    print(f"{args.sentence}\n-> {best.text}  (log p = {best.log_prob:.3f})")
    print(f"attention: {maps.layers} layer(s) x {maps.heads} head(s) x "
          f"{len(maps.target_tokens)} target x {len(maps.source_tokens)} source tokens")
    if maps.layers == 0:
        raise SystemExit("this model does not attend: there is no attention to draw")
    layer = maps.layers - 1
    draw(maps, layer, f"{Path(args.model).name}, layer {layer}, mean over heads", args.out)
    print(f"wrote {args.out}")
    attention_on_arrays()


if __name__ == "__main__":
    main()

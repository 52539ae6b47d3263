"""The matrix FLOPs of one Transformer training update, counted from the batch shapes.

Used by run_training.sh to turn both sides' ms/update into GFLOP/s and a share of the
FMA peak measured in the same run, and to say what a given speed-up over the peer
would require of the machine. Counted on the padded shapes [B, Ts] / [B, Tt], which
both sides compute (qkv skips fully masked attention tiles; the count does not), for
the benchmark's Transformer (run_training.sh: d 256, 4 heads, 3 + 3 layers, FFN 1024,
vocabulary 8000, tied output projection). Products only: 2 FLOPs per multiply-add;
element-wise work (softmax, layer norm, Adam) is left out, so the share of peak is a
lower bound on how busy the FMA units are. Backward costs twice the forward products
(one product for the input's gradient, one for the weight's); the embedding lookup's
gradient is a scatter-add and not counted.
"""

D, FFN, LAYERS, VOCAB = 256, 1024, 3, 8000


def forward_flops(b, ts, tt, d=D, ffn=FFN, layers=LAYERS, vocab=VOCAB):
    """Forward products of one [B, Ts] / [B, Tt] batch.

    By hand for one token each side, d 2, FFN 4, one layer, vocabulary 3: encoder
    Q/K/V 24 + out 8 + attention 8 + FFN 32 = 72; decoder self 24 + 8 + 8, cross Q 8,
    K+V on the memory 16, out 8, attention 8, FFN 32 = 112; output projection 12.
    >>> forward_flops(1, 1, 1, d=2, ffn=4, layers=1, vocab=3)
    196

    Linear in the layer count past the output projection, quadratic only in attention:
    >>> forward_flops(1, 1, 1, d=2, ffn=4, layers=2, vocab=3) - 12
    368
    >>> forward_flops(2, 3, 5, d=2, ffn=4, layers=1, vocab=3) - forward_flops(2, 3, 5, d=2, ffn=4, layers=1, vocab=0)
    120
    """
    ns, nt = b * ts, b * tt  # source and target rows
    encoder = layers * (2 * ns * d * 3 * d      # Q, K, V
                        + 2 * ns * d * d        # output projection
                        + 2 * 2 * b * ts * ts * d  # scores and context, all heads
                        + 2 * 2 * ns * d * ffn)  # two FFN products
    decoder = layers * (2 * nt * d * 3 * d + 2 * nt * d * d + 2 * 2 * b * tt * tt * d  # self
                        + 2 * nt * d * d + 2 * ns * d * 2 * d + 2 * nt * d * d       # cross Q, K+V, out
                        + 2 * 2 * b * tt * ts * d                                     # cross scores, context
                        + 2 * 2 * nt * d * ffn)
    output = 2 * nt * d * vocab
    return encoder + decoder + output


def update_flops(b, ts, tt):
    """Forward + backward products of one update on a [B, Ts] / [B, Tt] batch."""
    return 3 * forward_flops(b, ts, tt)


if __name__ == "__main__":
    # A worked example: the size of run_training.sh's batches.
    print(f"{update_flops(160, 26, 27) / 1e9:.1f} GFLOP for [160, 26, 27]")

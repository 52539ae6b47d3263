"""The matrix FLOPs of one training update of the benchmark's models, from the batch shapes.

Used by run_training.sh to turn both sides' ms/update into GFLOP/s and a share of the
FMA peak measured in the same run, and to say what a given speed-up over the peer
would require of the machine. Counted on the padded shapes [B, Ts] / [B, Tt], which
the peer computes, or, for qkv, as qkv performs them (`real`: the real source and target
tokens): its Transformer runs every position-wise product (projections, FFN, output
projection) on the real rows only and attention on the padded heads (it also skips fully
masked attention tiles; the count does not); its RNNs skip the output projection's padded
rows, and their recurrent layers (the encoder's, and the decoder's without attention)
compute real positions only (the count takes all of them as skipped; steps with under
10 % padded rows compute those too, so qkv's count is a lower bound). For the
benchmark's Transformer (run_training.sh: d 256, 4 heads, 3 + 3 layers, FFN 1024,
vocabulary 8000, tied output projection). Products only: 2 FLOPs per multiply-add;
element-wise work (softmax, layer norm, Adam) is left out, so the share of peak is a
lower bound on how busy the FMA units are. Backward costs twice the forward products
(one product for the input's gradient, one for the weight's); the embedding lookup's
gradient is a scatter-add and not counted.

The RNNs (run_training.sh: bi-GRU 256 encoder, GRU 256 decoder, one layer each, with
Bahdanau attention or none) count the same way: each GRU's input and recurrent products
(3 gates), the bridge, the additive attention's projections, scores (vᵀ tanh: one
multiply-add per element) and context, the readout, and the output projection.
"""

D, FFN, LAYERS, VOCAB = 256, 1024, 3, 8000


def forward_flops(b, ts, tt, d=D, ffn=FFN, layers=LAYERS, vocab=VOCAB, real=None):
    """Forward products of one [B, Ts] / [B, Tt] batch; `real` = (source rows, target
    rows) that the position-wise products run on (None: every padded row).

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

    Packed rows: one real token each side of two; only attention (3 x 24) grows over 196.
    >>> forward_flops(1, 2, 2, d=2, ffn=4, layers=1, vocab=3, real=(1, 1)) - 196
    72
    """
    ns, nt = (b * ts, b * tt) if real is None else real  # rows of the position-wise work
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


def gru_flops(rows, inputs, hidden):
    """A GRU over `rows` (batch x time) inputs: 3 gates' input and recurrent products.
    >>> gru_flops(1, 2, 3)
    90
    """
    return 2 * rows * 3 * hidden * (inputs + hidden)


def rnn_forward_flops(b, ts, tt, attention, e=D, h=D, vocab=VOCAB, real=None):
    """Forward products of the benchmark's GRU model, attention "additive" or "none";
    `real` = (real source tokens, real target tokens) counts qkv's skips.

    By hand for one token each side, E = H = 1, vocabulary 2, no attention: encoder 2
    directions x 12, bridge 2 x 2 -> 1 = 4, decoder 12, readout 2, output 4 = 46.
    >>> rnn_forward_flops(1, 1, 1, "none", e=1, h=1, vocab=2)
    46

    Bahdanau adds U on the memory (2H -> A = H: 4 per source token), per target step
    W s (2), scores (2 per source token) and the context (4 per source token), a decoder
    input wider by 2H (6 x 2 = 12 more) and a readout of 3H + E inputs (8 instead of 2).
    >>> rnn_forward_flops(1, 1, 1, "additive", e=1, h=1, vocab=2) - 46
    30
    """
    ns, nt = b * ts, b * tt
    rs, rt = (ns, nt) if real is None else real  # rows the recurrent layers compute
    encoder = 2 * gru_flops(rs, e, h)
    bridge = 2 * b * 2 * h * h
    output = 2 * rt * e * vocab
    if attention == "none":
        return encoder + bridge + gru_flops(rt, e, h) + 2 * nt * h * e + output
    if attention != "additive":
        raise ValueError(f"attention {attention!r}: expected 'additive' or 'none'")
    a = h
    attend = (2 * ns * 2 * h * a          # U h_j, once per source
              + 2 * nt * h * a            # W s_{t-1}, every step
              + 2 * b * tt * ts * a       # v . tanh(...) per (step, source position)
              + 2 * b * tt * ts * 2 * h)  # context: weights x annotations
    decoder = gru_flops(nt, e + 2 * h, h)
    readout = 2 * nt * (3 * h + e) * e
    return encoder + bridge + attend + decoder + readout + output


def update_flops(b, ts, tt, model="transformer", real=None):
    """Forward + backward products of one update on a [B, Ts] / [B, Tt] batch of `model`
    (a run_training.sh case: transformer, rnn-additive, rnn-none). `real`: (real source
    tokens, real target tokens) when counting what qkv performs (see the module's note);
    None counts every padded row, as the peer computes.
    >>> update_flops(1, 1, 1, "rnn-none") == 3 * rnn_forward_flops(1, 1, 1, "none")
    True

    One padded target row less saves 3 x 2 x E x V (E 256, V 8000) and the decoder GRU's
    3 x 2 x 3H x (E + H) for the RNN without attention, and the decoder's position-wise
    products too for the Transformer:
    >>> update_flops(2, 3, 5, "rnn-none") - update_flops(2, 3, 5, "rnn-none", (6, 9))
    14647296
    >>> update_flops(2, 3, 5, "transformer") - update_flops(2, 3, 5, "transformer", (6, 9))
    28803072
    """
    if model == "transformer":
        return 3 * forward_flops(b, ts, tt, real=real)
    if model.startswith("rnn-"):
        return 3 * rnn_forward_flops(b, ts, tt, model[len("rnn-"):], real=real)
    raise ValueError(f"model {model!r}: expected transformer, rnn-additive or rnn-none")


if __name__ == "__main__":
    # A worked example: the size of run_training.sh's batches.
    for model in ("transformer", "rnn-additive", "rnn-none"):
        print(f"{model}: {update_flops(160, 26, 27, model) / 1e9:.1f} GFLOP for [160, 26, 27]")

"""Attention on numpy arrays: the library's attend() and MultiHeadAttention.

Arrays are batch first (q [B, Tq, Dq], k [B, Tk, Dk], v [B, Tk, Dv]), float32 or float64,
C-contiguous; they are read in place. Results are new numpy arrays, equal bit for bit to
what the C++ API returns for the same inputs.

    import numpy as np, qkv
    q = np.random.rand(2, 3, 8).astype(np.float32); k = v = np.random.rand(2, 5, 8).astype(np.float32)
    context, weights = qkv.attention.attend(q, k, v, kind="scaled_dot", key_lengths=[5, 3])
    grads = qkv.attention.attend_backward(q, k, v, np.ones_like(context), key_lengths=[5, 3])
"""

from ._qkv.attention import (
    attend,
    attend_backward,
    multi_head_attention,
    multi_head_attention_backward,
)

SCORE_KINDS = ("scaled_dot", "dot", "cosine", "general", "additive")

__all__ = ["SCORE_KINDS", "attend", "attend_backward", "multi_head_attention",
           "multi_head_attention_backward"]

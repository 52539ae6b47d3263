"""qkv.attention against numpy references in float64 (every score kind x every mask kind),
gradients against central finite differences, multi-head attention against PyTorch's
formula written in numpy, and every bad-array path."""

import itertools
import os
import subprocess

import numpy as np
import pytest

import qkv
from qkv import attention

B, TQ, TK, D, DV, A = 2, 3, 4, 5, 3, 6
KINDS = ("scaled_dot", "dot", "cosine", "general", "additive")
MASKS = ("none", "key_lengths", "causal", "bias", "allowed", "all")


def inputs(dtype=np.float64, seed=0):
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((B, TQ, D)).astype(dtype)
    k = rng.standard_normal((B, TK, D)).astype(dtype)
    v = rng.standard_normal((B, TK, DV)).astype(dtype)
    params = {
        "general": {"w": rng.standard_normal((D, D)).astype(dtype)},
        "additive": {"w": rng.standard_normal((D, A)).astype(dtype),
                     "u": rng.standard_normal((D, A)).astype(dtype),
                     "b": rng.standard_normal(A).astype(dtype),
                     "v": rng.standard_normal(A).astype(dtype)},
    }
    return q, k, v, params


def mask_args(mask, dtype=np.float64):
    rng = np.random.default_rng(1)
    out = {}
    if mask in ("key_lengths", "all"):
        out["key_lengths"] = [TK, 2]
    if mask in ("causal", "all"):
        out["causal"] = True
    if mask in ("bias", "all"):
        bias = rng.standard_normal((B, TQ, TK)).astype(dtype)
        bias[0, 1, 2] = -np.inf
        out["bias"] = bias
    if mask in ("allowed", "all"):
        allowed = np.ones((TQ, TK), dtype=dtype)
        allowed[2, 0] = 0
        allowed[0, :] = 0  # a fully masked query: zero weights, zero context
        out["allowed"] = allowed
    return out


def reference(q, k, v, kind, params=None, key_lengths=None, causal=False, bias=None,
              allowed=None, scale=None, temperature=1.0):
    """The formulas of attention.h in float64 numpy."""
    q, k, v = (x.astype(np.float64) for x in (q, k, v))
    if kind == "scaled_dot":
        s = q @ k.transpose(0, 2, 1) * (scale if scale else 1 / np.sqrt(k.shape[-1]))
    elif kind == "dot":
        s = q @ k.transpose(0, 2, 1)
    elif kind == "cosine":
        qn = q / np.linalg.norm(q, axis=-1, keepdims=True)
        kn = k / np.linalg.norm(k, axis=-1, keepdims=True)
        s = qn @ kn.transpose(0, 2, 1) / temperature
    elif kind == "general":
        s = q @ params["w"] @ k.transpose(0, 2, 1)
    else:  # additive: v . tanh(q W + k U + b)
        h = (q @ params["w"])[:, :, None, :] + (k @ params["u"])[:, None, :, :] + params["b"]
        s = np.tanh(h) @ params["v"]
    visible = np.ones(s.shape, dtype=bool)
    tq, tk = s.shape[1], s.shape[2]
    if key_lengths is not None:
        visible &= np.arange(tk)[None, None, :] < np.asarray(key_lengths)[:, None, None]
    if causal:
        visible &= np.arange(tk)[None, :] <= np.arange(tq)[:, None] + (tk - tq)
    if bias is not None:
        s = s + bias
        visible &= np.isfinite(np.broadcast_to(bias, s.shape))
    if allowed is not None:
        visible &= np.broadcast_to(allowed, s.shape) == 1
    s = np.where(visible, s, -np.inf)
    m = np.max(np.where(visible, s, -1e300), axis=-1, keepdims=True)
    e = np.where(visible, np.exp(s - m), 0.0)
    z = e.sum(-1, keepdims=True)
    w = np.divide(e, z, out=np.zeros_like(e), where=z > 0)
    return w @ v, w


@pytest.mark.parametrize("kind,mask", list(itertools.product(KINDS, MASKS)))
@pytest.mark.parametrize("dtype,tol", [(np.float64, 1e-12), (np.float32, 2e-5)])
@pytest.mark.parametrize("fused", [True, False])
def test_attend_matches_numpy(kind, mask, dtype, tol, fused):
    q, k, v, params = inputs(dtype)
    p = params.get(kind)
    m = mask_args(mask, dtype)
    context, weights = attention.attend(q, k, v, kind=kind, params=p, fused=fused, **m)
    ref_c, ref_w = reference(q, k, v, kind, p, **m)
    assert context.dtype == dtype and weights.dtype == dtype
    assert context.shape == (B, TQ, DV) and weights.shape == (B, TQ, TK)
    np.testing.assert_allclose(context, ref_c, rtol=tol, atol=tol)
    np.testing.assert_allclose(weights, ref_w, rtol=tol, atol=tol)
    if mask in ("allowed", "all"):
        assert not np.any(context[:, 0]) and not np.any(weights[:, 0])


def test_scale_and_temperature_options():
    q, k, v, _ = inputs()
    c, _ = attention.attend(q, k, v, kind="scaled_dot", scale=0.25)
    np.testing.assert_allclose(c, reference(q, k, v, "scaled_dot", scale=0.25)[0], atol=1e-12)
    c, _ = attention.attend(q, k, v, kind="cosine", temperature=0.1)
    np.testing.assert_allclose(c, reference(q, k, v, "cosine", temperature=0.1)[0], atol=1e-12)
    c, w = attention.attend(q, k, v, need_weights=False)
    assert w is None and c.shape == (B, TQ, DV)


def test_repeated_calls_and_copies_are_bitwise_identical():
    q, k, v, params = inputs(np.float32)
    for kind in KINDS:
        a = attention.attend(q, k, v, kind=kind, params=params.get(kind), key_lengths=[4, 1])
        b = attention.attend(q.copy(), k.copy(), v.copy(), kind=kind, params=params.get(kind),
                             key_lengths=np.array([4, 1]))
        assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])


def numeric_grad(f, x, eps=1e-6):
    """Central differences of the scalar f() with respect to every element of x (in place)."""
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        old = x[i]
        x[i] = old + eps
        up = f()
        x[i] = old - eps
        down = f()
        x[i] = old
        g[i] = (up - down) / (2 * eps)
    return g


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("mask", ["none", "all"])
def test_gradients_match_finite_differences(kind, mask):
    q, k, v, params = inputs(np.float64, seed=3)
    p = params.get(kind)
    m = mask_args(mask)
    g_out = np.random.default_rng(5).standard_normal((B, TQ, DV))

    def loss():
        c, _ = attention.attend(q, k, v, kind=kind, params=p, need_weights=False, **m)
        return float(np.sum(c * g_out))

    grads = attention.attend_backward(q, k, v, g_out, kind=kind, params=p, **m)
    for name, x in (("q", q), ("k", k), ("v", v)):
        np.testing.assert_allclose(grads[name], numeric_grad(loss, x), rtol=1e-5, atol=1e-7,
                                   err_msg=f"d/d{name}")
    assert set(grads["params"]) == set(p or {})
    for name, x in (p or {}).items():
        np.testing.assert_allclose(grads["params"][name], numeric_grad(loss, x), rtol=1e-5,
                                   atol=1e-7, err_msg=f"d/dparams[{name}]")


def torch_mha_reference(x_q, x_k, x_v, heads, w_in, b_in, w_out, b_out, key_lengths=None,
                        causal=False):
    """torch.nn.functional.multi_head_attention_forward's math, batch first, in numpy."""
    e = x_q.shape[-1]
    dh = e // heads
    wq, wk, wv = np.split(w_in, 3)
    bq, bk, bv = np.split(b_in, 3)

    def split(x):  # [B, T, E] -> [B, H, T, Dh]
        return x.reshape(x.shape[0], x.shape[1], heads, dh).transpose(0, 2, 1, 3)

    qh, kh, vh = split(x_q @ wq.T + bq), split(x_k @ wk.T + bk), split(x_v @ wv.T + bv)
    s = qh @ kh.transpose(0, 1, 3, 2) / np.sqrt(dh)
    tq, tk = s.shape[-2:]
    visible = np.ones(s.shape, dtype=bool)
    if key_lengths is not None:
        visible &= np.arange(tk) < np.asarray(key_lengths)[:, None, None, None]
    if causal:
        visible &= np.arange(tk)[None, :] <= np.arange(tq)[:, None] + (tk - tq)
    s = np.where(visible, s, -np.inf)
    w = np.exp(s - s.max(-1, keepdims=True))
    w /= w.sum(-1, keepdims=True)
    out = (w @ vh).transpose(0, 2, 1, 3).reshape(x_q.shape[0], tq, e)
    return out @ w_out.T + b_out, w


def mha_inputs(e=8, seed=2):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((B, TK, e))
    mem = rng.standard_normal((B, TK + 1, e))
    return (x, mem, rng.standard_normal((3 * e, e)) / 3, rng.standard_normal(3 * e),
            rng.standard_normal((e, e)) / 3, rng.standard_normal(e))


@pytest.mark.parametrize("self_attention", [True, False])
def test_multi_head_matches_pytorch_formula(self_attention):
    x, mem, w_in, b_in, w_out, b_out = mha_inputs()
    kv = x if self_attention else mem
    lengths = [TK, 2] if self_attention else [TK + 1, 3]
    out, w = attention.multi_head_attention(x, kv, kv, 2, w_in, b_in, w_out, b_out,
                                            key_lengths=lengths, causal=self_attention,
                                            average_attn_weights=False)
    ref_out, ref_w = torch_mha_reference(x, kv, kv, 2, w_in, b_in, w_out, b_out, lengths,
                                         self_attention)
    np.testing.assert_allclose(out, ref_out, atol=1e-10)
    np.testing.assert_allclose(w, ref_w, atol=1e-10)
    _, avg = attention.multi_head_attention(x, kv, kv, 2, w_in, b_in, w_out, b_out,
                                            key_lengths=lengths, causal=self_attention)
    np.testing.assert_allclose(avg, ref_w.mean(axis=1), atol=1e-10)


def test_multi_head_gradients_match_finite_differences():
    e = 4
    x, mem, w_in, b_in, w_out, b_out = mha_inputs(e, seed=4)
    g_out = np.random.default_rng(6).standard_normal((B, TK, e))

    def loss():
        out, _ = attention.multi_head_attention(x, mem, mem, 2, w_in, b_in, w_out, b_out,
                                                key_lengths=[TK + 1, 2], need_weights=False)
        return float(np.sum(out * g_out))

    grads = attention.multi_head_attention_backward(x, mem, mem, g_out, 2, w_in, b_in, w_out,
                                                    b_out, key_lengths=[TK + 1, 2])
    for name, arr in (("query", x), ("key", mem), ("in_proj_weight", w_in),
                      ("in_proj_bias", b_in), ("out_proj_weight", w_out),
                      ("out_proj_bias", b_out)):
        np.testing.assert_allclose(grads[name], numeric_grad(loss, arr), rtol=1e-5, atol=1e-7,
                                   err_msg=name)
    assert "value" not in grads  # key and value are one array: its gradient is under 'key'


def test_bad_arrays_are_clear_python_errors():
    q, k, v, params = inputs(np.float32)
    with pytest.raises(TypeError, match="q must be a numpy array, got list"):
        attention.attend(q.tolist(), k, v)
    with pytest.raises(TypeError, match="k has dtype int64"):
        attention.attend(q, k.astype(np.int64), v)
    with pytest.raises(TypeError, match="k has dtype >f4"):
        attention.attend(q, k.astype(">f4"), v)
    with pytest.raises(TypeError, match="v has dtype float64 but the other arrays are float32"):
        attention.attend(q, k, v.astype(np.float64))
    with pytest.raises(ValueError, match="not C-contiguous"):
        attention.attend(q, np.ascontiguousarray(k.transpose(0, 2, 1)).transpose(0, 2, 1), v)
    with pytest.raises(ValueError, match="q must have 3 dimensions, got float32\\[3, 5\\]"):
        attention.attend(q[0], k, v)
    with pytest.raises(qkv.ShapeError, match="Dq == Dk"):
        attention.attend(q, k[:, :, :4].copy(), v)
    with pytest.raises(ValueError, match="kind='bilinear' is not a score function"):
        attention.attend(q, k, v, kind="bilinear")
    with pytest.raises(qkv.ConfigError, match="need params.w"):
        attention.attend(q, k, v, kind="general")
    with pytest.raises(qkv.ShapeError, match="params.w"):
        attention.attend(q, k, v, kind="general", params={"w": params["additive"]["w"]})
    with pytest.raises(ValueError, match="the score parameters are"):
        attention.attend(q, k, v, kind="general", params={"W": params["general"]["w"]})
    with pytest.raises(qkv.InvalidValueError, match="key_lengths\\[1\\] = 9 outside"):
        attention.attend(q, k, v, key_lengths=[1, 9])
    with pytest.raises(qkv.ShapeError, match="3 key_lengths for batch size B = 2"):
        attention.attend(q, k, v, key_lengths=[1, 2, 3])
    with pytest.raises(TypeError, match="key_lengths must hold integers"):
        attention.attend(q, k, v, key_lengths=np.array([1.5, 2.0]))
    with pytest.raises(qkv.ShapeError, match="mask bias"):
        attention.attend(q, k, v, bias=np.zeros((TQ, TK + 1), np.float32))
    with pytest.raises(qkv.InvalidValueError, match="must be 0 \\(masked\\) or 1"):
        attention.attend(q, k, v, allowed=np.full((TQ, TK), 0.5, np.float32))
    with pytest.raises(qkv.ConfigError, match="temperature"):
        attention.attend(q, k, v, kind="cosine", temperature=0.0)
    with pytest.raises(ValueError, match="scale must be > 0"):
        attention.attend(q, k, v, scale=-1.0)
    with pytest.raises(qkv.ShapeError, match="grad_output"):
        attention.attend_backward(q, k, v, np.zeros((B, TQ, DV + 1), np.float32))
    x, mem, w_in, b_in, w_out, b_out = mha_inputs()
    with pytest.raises(ValueError, match="in_proj_weight is \\[8, 8\\] but should be \\[3E, E\\]"):
        attention.multi_head_attention(x, x, x, 2, w_out, b_in, w_out, b_out)
    with pytest.raises(qkv.ConfigError):
        attention.multi_head_attention(x, x, x, 3, w_in, b_in, w_out, b_out)
    # A failed call leaves nothing behind: the next one works.
    c, _ = attention.attend(q, k, v)
    assert c.shape == (B, TQ, DV)


def test_results_own_their_memory_and_inputs_are_unchanged():
    q, k, v, _ = inputs(np.float32)
    before = [x.copy() for x in (q, k, v)]
    c, w = attention.attend(q, k, v)
    del q, k, v
    assert c.flags.c_contiguous and w.flags.c_contiguous
    assert np.isfinite(c).all() and np.allclose(w.sum(-1), 1, atol=1e-6)
    for x, y in zip(before, inputs(np.float32)[:3]):
        assert np.array_equal(x, y)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("causal,key_lengths", [(False, []), (True, [TK, 2])])
def test_equals_the_cpp_api_bit_for_bit(kind, causal, key_lengths, work_dir):
    """qkv.attention.attend against a C++ program calling attention::attend on the same
    float32 values (the fused kernels, SIMD dispatch and all)."""
    if "QKV_ATTEND_REFERENCE" not in os.environ:
        pytest.skip("QKV_ATTEND_REFERENCE (the C++ program, built with the tests) is not set: "
                    "run the suite through ctest")
    q, k, v, params = inputs(np.float32, seed=11)
    d = work_dir / f"cpp_attend_{kind}_{int(causal)}"
    d.mkdir(parents=True, exist_ok=True)
    for name, x in (("q", q), ("k", k), ("v", v)):
        x.tofile(d / f"{name}.f32")
    p = None
    if kind == "general":
        p = {"w": params["general"]["w"]}
    elif kind == "additive":  # square parameters (A = D), as the program reads them
        rng = np.random.default_rng(12)
        p = {n: rng.standard_normal(s).astype(np.float32)
             for n, s in (("w", (D, D)), ("u", (D, D)), ("b", (D,)), ("v", (D,)))}
    for name, x in (p or {}).items():
        x.tofile(d / ("v_param.f32" if name == "v" else f"{name}.f32"))
    args = [d, kind, B, TQ, TK, D, DV, int(causal), *key_lengths]
    subprocess.run([os.environ["QKV_ATTEND_REFERENCE"], *map(str, args)], check=True, timeout=60)
    context, weights = attention.attend(q, k, v, kind=kind, params=p, causal=causal,
                                        key_lengths=key_lengths or None)
    cpp_context = np.fromfile(d / "context.f32", dtype=np.float32).reshape(context.shape)
    cpp_weights = np.fromfile(d / "weights.f32", dtype=np.float32).reshape(weights.shape)
    assert np.array_equal(context, cpp_context) and np.array_equal(weights, cpp_weights)

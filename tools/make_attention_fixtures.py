#!/usr/bin/python3
"""Writes the PyTorch golden fixtures for qkv's attention layer.

Run by hand (never by tests or CI), with Debian's PyTorch:

    /usr/bin/python3 tools/make_attention_fixtures.py

Output: tests/fixtures/attention/*.txt (committed). Deterministic: every case seeds
torch.manual_seed with its own fixed seed, so a rerun with the same torch writes the same
files.

File format (read by src/attention/tests/fixture_loader.h): plain text, one tensor per
line,

    name dim0 dim1 ... : v0 v1 ...

dims are space-separated ints (none for a scalar), values are row-major and printed with
repr() of a Python float (full float64 precision; "inf", "-inf", "nan" allowed). Lines
starting with '#' are comments (the case description, the torch version); blank lines are
ignored.

Numerics: inputs, parameters and the loss weights R are drawn in float64 and rounded to
float32-representable values, so the C++ side may load them as float32 or float64 without
changing them. All computation is float64, so the outputs and gradients are exact
references (to float64 rounding) for both precisions.

Loss: every case stores a fixed random R shaped like the output and the gradients of
loss = sum(output * R) with respect to the inputs (q, k, v or query, key, value) and the
parameters. Weights are forward only (they are not part of the loss).

Mask conventions follow qkv::attention::MaskSpec exactly:
  * key_lengths [B] (stored as floats): key j visible to batch row b iff j < key_lengths[b].
  * causal (stored as 0.0 / 1.0): key j visible to query i iff j <= i + (Tk - Tq), i.e.
    aligned at the END (a Tq = 1 decoder step sees every key). NOTE: torch 1.13's
    F._scaled_dot_product_attention(is_causal=True) aligns at the START (triu from the top
    left), which differs when Tq != Tk, so the fixtures build the causal mask explicitly.
  * bias [Tq, Tk] or [B, Tq, Tk]: added to the scores; -inf masks a key. No gradient.
  * a query with no visible key gets a zero context and zero gradients (qkv contract; torch
    gives NaN there, so the reference used for such rows is the explicit formula below with
    fully masked rows forced to zero weights).

Scaled-dot reference: the explicit formula softmax(q k^T / sqrt(Dk) + mask) v in float64
autograd (masked_softmax below). It is cross-checked against
torch.nn.functional._scaled_dot_product_attention (torch 1.13 private API; only boolean
masks, True = take part) for every case it can express, against a naive per-element Python
loop for every case, and its gradients against the gradients through
_scaled_dot_product_attention. Multi-head goldens come from nn.MultiheadAttention itself
(batch_first=True), cross-checked against the explicit per-head formula with the split
weights. Additive (Bahdanau) and general (Luong) scores are written explicitly in torch and
cross-checked with naive loops.
"""

import math
import os
import sys

import torch
import torch.nn.functional as F

OUT_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures",
                       "attention")
DT = torch.float64


# ---------------------------------------------------------------------------------------
# helpers

def f32_round(t):
    """Rounds to float32-representable values, kept as float64."""
    return t.to(torch.float32).to(DT)


def randn(*shape, scale=1.0):
    return f32_round(torch.randn(*shape, dtype=DT) * scale)


def leaf(t):
    return t.clone().detach().requires_grad_(True)


def visible_mask(B, Tq, Tk, key_lengths=None, causal=False, bias=None):
    """Bool [B, Tq, Tk]: True where MaskSpec makes key j visible to query i."""
    vis = torch.ones(B, Tq, Tk, dtype=torch.bool)
    if key_lengths is not None:
        j = torch.arange(Tk)
        for b in range(B):
            vis[b, :, :] &= (j < key_lengths[b]).unsqueeze(0)
    if causal:
        i = torch.arange(Tq).unsqueeze(1)
        j = torch.arange(Tk).unsqueeze(0)
        vis &= (j <= i + (Tk - Tq)).unsqueeze(0)
    if bias is not None:
        vis &= torch.broadcast_to(bias != -math.inf, (B, Tq, Tk))
    return vis


def masked_softmax(scores, vis, bias=None):
    """Softmax over the last dim of scores [B, (H,) Tq, Tk] restricted to vis.

    The finite bias entries are added; rows with no visible key give all-zero weights and a
    zero gradient (qkv's contract), computed without NaNs anywhere in the graph.
    """
    if bias is not None:
        finite_bias = torch.where(bias == -math.inf, torch.zeros_like(bias), bias)
        scores = scores + finite_bias
    any_vis = vis.any(dim=-1, keepdim=True)
    safe = torch.where(vis, scores, torch.full_like(scores, -math.inf))
    safe = torch.where(any_vis, safe, torch.zeros_like(scores))
    return torch.softmax(safe, dim=-1) * any_vis.to(scores.dtype)


def naive_attention(score_fn, v, vis):
    """Per-element Python loop: context[b][i] = sum_j w_ij v[b][j], w = masked softmax."""
    B, Tq, Tk = vis.shape
    Dv = v.shape[-1]
    ctx = torch.zeros(B, Tq, Dv, dtype=DT)
    wts = torch.zeros(B, Tq, Tk, dtype=DT)
    for b in range(B):
        for i in range(Tq):
            js = [j for j in range(Tk) if vis[b, i, j]]
            if not js:
                continue
            s = {j: score_fn(b, i, j) for j in js}
            m = max(s.values())
            z = sum(math.exp(s[j] - m) for j in js)
            for j in js:
                w = math.exp(s[j] - m) / z
                wts[b, i, j] = w
                for d in range(Dv):
                    ctx[b, i, d] += w * float(v[b, j, d])
    return ctx, wts


def assert_close(name, a, b, tol=1e-12):
    a = a.detach()
    b = b.detach()
    assert a.shape == b.shape, f"{name}: shape {tuple(a.shape)} vs {tuple(b.shape)}"
    err = (a - b).abs().max().item() if a.numel() else 0.0
    ref = max(1.0, b.abs().max().item() if b.numel() else 0.0)
    assert err <= tol * ref, f"{name}: max abs error {err:g} (tolerance {tol * ref:g})"


def fmt(x):
    return repr(float(x))


class Fixture:
    def __init__(self, name, description, seed):
        self.name = name
        self.lines = [
            f"# qkv attention golden fixture: {name}",
            f"# torch {torch.__version__}, float64 computation, torch.manual_seed({seed});",
            "# inputs rounded to float32-representable values. Generated by",
            "# tools/make_attention_fixtures.py (do not edit by hand).",
        ]
        for d in description.strip().splitlines():
            self.lines.append("# " + d.strip())
        self.names = set()

    def add(self, name, t):
        assert name not in self.names, name
        self.names.add(name)
        t = torch.as_tensor(t, dtype=DT).detach()
        dims = " ".join(str(d) for d in t.shape)
        vals = " ".join(fmt(x) for x in t.reshape(-1).tolist())
        head = f"{name} {dims}" if dims else name
        self.lines.append(f"{head} : {vals}")

    def write(self):
        path = os.path.join(OUT_DIR, self.name + ".txt")
        with open(path, "w") as f:
            f.write("\n".join(self.lines) + "\n")
        return path


def add_mask(fx, key_lengths, causal, bias):
    if key_lengths is not None:
        fx.add("key_lengths", torch.tensor([float(x) for x in key_lengths]))
    fx.add("causal", torch.tensor(1.0 if causal else 0.0))
    if bias is not None:
        fx.add("bias", bias)


# ---------------------------------------------------------------------------------------
# a. scaled-dot attention

def scaled_dot_case(name, seed, B, Tq, Tk, D, Dv, key_lengths=None, causal=False,
                    bias_shape=None, description=""):
    torch.manual_seed(seed)
    q, k, v = randn(B, Tq, D), randn(B, Tk, D), randn(B, Tk, Dv)
    R = randn(B, Tq, Dv)
    bias = None
    if bias_shape is not None:
        bias = randn(*bias_shape)
        # -inf at fixed random places, but never a whole row (row 0 key 0 stays finite).
        drop = torch.rand(*bias_shape) < 0.3
        drop[..., 0] = False
        bias = torch.where(drop, torch.full_like(bias, -math.inf), bias)
    vis = visible_mask(B, Tq, Tk, key_lengths, causal, bias)

    ql, kl, vl = leaf(q), leaf(k), leaf(v)
    scale = 1.0 / math.sqrt(D)
    scores = torch.matmul(ql, kl.transpose(-1, -2)) * scale
    w = masked_softmax(scores, vis, bias)
    ctx = torch.matmul(w, vl)
    (ctx * R).sum().backward()

    # Cross-check 1: naive loop (forward).
    bias_full = None if bias is None else torch.broadcast_to(bias, (B, Tq, Tk))

    def score(b, i, j):
        s = scale * sum(float(q[b, i, d]) * float(k[b, j, d]) for d in range(D))
        return s + (0.0 if bias_full is None else float(bias_full[b, i, j]))

    nctx, nw = naive_attention(score, v, vis)
    assert_close(name + " naive context", ctx, nctx)
    assert_close(name + " naive weights", w, nw)

    # Cross-check 2: torch's own _scaled_dot_product_attention (bool mask: True = attend),
    # forward and gradients, when the mask is expressible (no finite bias) and no row is
    # fully masked (torch gives NaN there).
    if bias is None and bool(vis.any(dim=-1).all()):
        q2, k2, v2 = leaf(q), leaf(k), leaf(v)
        out, tw = F._scaled_dot_product_attention(q2, k2, v2, vis, 0.0, True, False)
        (out * R).sum().backward()
        assert_close(name + " sdpa context", ctx, out)
        assert_close(name + " sdpa weights", w, tw)
        assert_close(name + " sdpa grad q", ql.grad, q2.grad)
        assert_close(name + " sdpa grad k", kl.grad, k2.grad)
        assert_close(name + " sdpa grad v", vl.grad, v2.grad)
        if causal and Tq == Tk and key_lengths is None:
            q3, k3, v3 = leaf(q), leaf(k), leaf(v)
            out3, _ = F._scaled_dot_product_attention(q3, k3, v3, None, 0.0, False, True)
            assert_close(name + " sdpa is_causal", ctx, out3)

    fx = Fixture(name, f"""
Scaled-dot attention (ScoreKind::ScaledDot, scale = 1/sqrt(D)):
  context = softmax(q k^T / sqrt(D) + mask) v, weights = the softmax.
B={B} Tq={Tq} Tk={Tk} D={D} Dv={Dv}. {description}
loss = sum(context * R); grad_* = d loss / d *.
""", seed)
    add_mask(fx, key_lengths, causal, bias)
    for n, t in [("q", q), ("k", k), ("v", v), ("R", R), ("context", ctx), ("weights", w),
                 ("grad_q", ql.grad), ("grad_k", kl.grad), ("grad_v", vl.grad)]:
        fx.add(n, t)
    return fx


# ---------------------------------------------------------------------------------------
# b. nn.MultiheadAttention

def multi_head_case(name, seed, B, Tq, Tk, E, H, key_lengths=None, causal=False,
                    self_attention=False, description=""):
    torch.manual_seed(seed)
    mha = torch.nn.MultiheadAttention(E, H, bias=True, batch_first=True, dtype=DT)
    with torch.no_grad():
        # Round the parameters; give the biases non-zero values (torch zero-inits them).
        for p in mha.parameters():
            p.copy_(f32_round(p))
        mha.in_proj_bias.copy_(randn(3 * E, scale=0.5))
        mha.out_proj.bias.copy_(randn(E, scale=0.5))
    mha.train()  # keeps torch off its inference fast path; dropout is 0.
    if self_attention:
        assert Tq == Tk
        x = randn(B, Tq, E)
        query = key = value = x
    else:
        query, key, value = randn(B, Tq, E), randn(B, Tk, E), randn(B, Tk, E)
    R = randn(B, Tq, E)

    kpm = None
    if key_lengths is not None:
        kpm = torch.arange(Tk).unsqueeze(0) >= torch.tensor(key_lengths).unsqueeze(1)  # True = ignore
    attn_mask = None
    if causal:
        i = torch.arange(Tq).unsqueeze(1)
        j = torch.arange(Tk).unsqueeze(0)
        attn_mask = j > i + (Tk - Tq)  # True = not allowed (torch 1.13 bool attn_mask)

    if self_attention:
        xl = leaf(x)
        ql = kl = vl = xl
    else:
        ql, kl, vl = leaf(query), leaf(key), leaf(value)
    out, w_avg = mha(ql, kl, vl, key_padding_mask=kpm, need_weights=True, attn_mask=attn_mask,
                     average_attn_weights=True)
    (out * R).sum().backward()
    with torch.no_grad():
        out_h, w_head = mha(query, key, value, key_padding_mask=kpm, need_weights=True,
                            attn_mask=attn_mask, average_attn_weights=False)
    assert_close(name + " per-head run output", out, out_h, 0.0)

    W = mha.in_proj_weight.detach()
    bW = mha.in_proj_bias.detach()
    wq, wk, wv = W[:E], W[E:2 * E], W[2 * E:]
    bq, bk, bv = bW[:E], bW[E:2 * E], bW[2 * E:]
    wo, bo = mha.out_proj.weight.detach(), mha.out_proj.bias.detach()
    gW, gb = mha.in_proj_weight.grad, mha.in_proj_bias.grad
    grads = {"grad_wq": gW[:E], "grad_wk": gW[E:2 * E], "grad_wv": gW[2 * E:],
             "grad_bq": gb[:E], "grad_bk": gb[E:2 * E], "grad_bv": gb[2 * E:],
             "grad_wo": mha.out_proj.weight.grad, "grad_bo": mha.out_proj.bias.grad}

    # Cross-check: the explicit formula with the split parameters, in MultiHeadParams layout
    # (x W^T + b), forward and gradients.
    P = {n: leaf(t) for n, t in [("wq", wq), ("wk", wk), ("wv", wv), ("wo", wo), ("bq", bq),
                                ("bk", bk), ("bv", bv), ("bo", bo)]}
    if self_attention:
        xe = leaf(x)
        qe = ke = ve = xe
    else:
        qe, ke, ve = leaf(query), leaf(key), leaf(value)
    Dh = E // H

    def heads(t, T):  # [B, T, E] -> [B, H, T, Dh]
        return t.reshape(B, T, H, Dh).transpose(1, 2)

    Q = heads(qe @ P["wq"].T + P["bq"], Tq)
    K = heads(ke @ P["wk"].T + P["bk"], Tk)
    V = heads(ve @ P["wv"].T + P["bv"], Tk)
    vis = visible_mask(B, Tq, Tk, key_lengths, causal).unsqueeze(1)  # [B, 1, Tq, Tk]
    wh = masked_softmax(Q @ K.transpose(-1, -2) / math.sqrt(Dh), vis)
    merged = (wh @ V).transpose(1, 2).reshape(B, Tq, E)
    oe = merged @ P["wo"].T + P["bo"]
    (oe * R).sum().backward()
    assert_close(name + " explicit output", oe, out)
    assert_close(name + " explicit per-head weights", wh, w_head)
    assert_close(name + " explicit averaged weights", wh.mean(dim=1), w_avg)
    for n in ["wq", "wk", "wv", "wo", "bq", "bk", "bv", "bo"]:
        assert_close(name + " explicit grad " + n, P[n].grad, grads["grad_" + n])
    if self_attention:
        assert_close(name + " explicit grad x", xe.grad, xl.grad)
    else:
        assert_close(name + " explicit grad query", qe.grad, ql.grad)
        assert_close(name + " explicit grad key", ke.grad, kl.grad)
        assert_close(name + " explicit grad value", ve.grad, vl.grad)

    fx = Fixture(name, f"""
nn.MultiheadAttention(embed_dim={E}, num_heads={H}, bias=True, batch_first=True), float64.
Parameters in MultiHeadParams layout (applied as x W^T + b): wq/wk/wv = rows [0,E), [E,2E),
[2E,3E) of in_proj_weight, bq/bk/bv likewise of in_proj_bias, wo/bo = out_proj.
B={B} Tq={Tq} Tk={Tk} E={E} H={H}. {description}
key_lengths -> torch key_padding_mask[b, j] = (j >= key_lengths[b]) (True = ignore).
causal -> torch bool attn_mask[i, j] = (j > i + Tk - Tq) (True = not allowed).
weights_avg: need_weights=True, average_attn_weights=True  (HeadWeights::Averaged) [B,Tq,Tk]
weights_per_head: average_attn_weights=False (HeadWeights::PerHead) [B,H,Tq,Tk]
loss = sum(output * R); grad_* = d loss / d *.
""", seed)
    fx.add("heads", torch.tensor(float(H)))
    add_mask(fx, key_lengths, causal, None)
    if self_attention:
        fx.add("x", x)
    else:
        fx.add("query", query)
        fx.add("key", key)
        fx.add("value", value)
    for n, t in [("wq", wq), ("wk", wk), ("wv", wv), ("wo", wo), ("bq", bq), ("bk", bk),
                 ("bv", bv), ("bo", bo), ("R", R), ("output", out), ("weights_avg", w_avg),
                 ("weights_per_head", w_head)]:
        fx.add(n, t)
    if self_attention:
        fx.add("grad_x", xl.grad)
    else:
        fx.add("grad_query", ql.grad)
        fx.add("grad_key", kl.grad)
        fx.add("grad_value", vl.grad)
    for n in ["wq", "wk", "wv", "wo", "bq", "bk", "bv", "bo"]:
        fx.add("grad_" + n, grads["grad_" + n])
    return fx


# ---------------------------------------------------------------------------------------
# c. additive (Bahdanau) and d. general (Luong) scores

def additive_case(name, seed, B, Tq, Tk, Dq, Dk, A, Dv, key_lengths=None, causal=False,
                  description=""):
    torch.manual_seed(seed)
    q, k, v = randn(B, Tq, Dq), randn(B, Tk, Dk), randn(B, Tk, Dv)
    W, U = randn(Dq, A, scale=0.5), randn(Dk, A, scale=0.5)
    b, va = randn(A, scale=0.5), randn(A)
    R = randn(B, Tq, Dv)
    vis = visible_mask(B, Tq, Tk, key_lengths, causal)
    L = {n: leaf(t) for n, t in [("q", q), ("k", k), ("v", v), ("w", W), ("u", U), ("b", b),
                                ("va", va)]}
    # scores[b,i,j] = sum_a va[a] tanh((q W)[b,i,a] + (k U)[b,j,a] + b[a])
    hid = torch.tanh((L["q"] @ L["w"]).unsqueeze(2) + (L["k"] @ L["u"]).unsqueeze(1) + L["b"])
    scores = hid @ L["va"]
    w = masked_softmax(scores, vis)
    ctx = w @ L["v"]
    (ctx * R).sum().backward()

    qW, kU = (q @ W), (k @ U)

    def score(bb, i, j):
        return sum(float(va[a]) * math.tanh(float(qW[bb, i, a]) + float(kU[bb, j, a]) + float(b[a]))
                   for a in range(A))

    nctx, nw = naive_attention(score, v, vis)
    assert_close(name + " naive context", ctx, nctx)
    assert_close(name + " naive weights", w, nw)

    fx = Fixture(name, f"""
Additive (Bahdanau) attention, ScoreKind::Additive, written explicitly in torch:
  score[b,i,j] = sum_a param_v[a] tanh((q param_w)[b,i,a] + (k param_u)[b,j,a] + param_b[a])
  (ScoreParams w = param_w [Dq, A], u = param_u [Dk, A], b = param_b [A], v = param_v [A]),
  context = masked_softmax(score) v. No scaling.
B={B} Tq={Tq} Tk={Tk} Dq={Dq} Dk={Dk} A={A} Dv={Dv}. {description}
loss = sum(context * R); grad_* = d loss / d *.
""", seed)
    add_mask(fx, key_lengths, causal, None)
    for n, t in [("q", q), ("k", k), ("v", v), ("param_w", W), ("param_u", U), ("param_b", b),
                 ("param_v", va), ("R", R), ("context", ctx), ("weights", w),
                 ("grad_q", L["q"].grad), ("grad_k", L["k"].grad), ("grad_v", L["v"].grad),
                 ("grad_param_w", L["w"].grad), ("grad_param_u", L["u"].grad),
                 ("grad_param_b", L["b"].grad), ("grad_param_v", L["va"].grad)]:
        fx.add(n, t)
    return fx


def general_case(name, seed, B, Tq, Tk, Dq, Dk, Dv, key_lengths=None, causal=False,
                 description=""):
    torch.manual_seed(seed)
    q, k, v = randn(B, Tq, Dq), randn(B, Tk, Dk), randn(B, Tk, Dv)
    W = randn(Dq, Dk, scale=0.5)
    R = randn(B, Tq, Dv)
    vis = visible_mask(B, Tq, Tk, key_lengths, causal)
    ql, kl, vl, Wl = leaf(q), leaf(k), leaf(v), leaf(W)
    scores = ql @ Wl @ kl.transpose(-1, -2)  # score[b,i,j] = q_i^T W k_j
    w = masked_softmax(scores, vis)
    ctx = w @ vl
    (ctx * R).sum().backward()

    def score(b, i, j):
        return sum(float(q[b, i, x]) * float(W[x, y]) * float(k[b, j, y])
                   for x in range(Dq) for y in range(Dk))

    nctx, nw = naive_attention(score, v, vis)
    assert_close(name + " naive context", ctx, nctx)
    assert_close(name + " naive weights", w, nw)

    fx = Fixture(name, f"""
General (Luong) attention, ScoreKind::General, written explicitly in torch:
  score[b,i,j] = q[b,i]^T param_w k[b,j] (ScoreParams w = param_w [Dq, Dk]),
  context = masked_softmax(score) v. No scaling.
B={B} Tq={Tq} Tk={Tk} Dq={Dq} Dk={Dk} Dv={Dv}. {description}
loss = sum(context * R); grad_* = d loss / d *.
""", seed)
    add_mask(fx, key_lengths, causal, None)
    for n, t in [("q", q), ("k", k), ("v", v), ("param_w", W), ("R", R), ("context", ctx),
                 ("weights", w), ("grad_q", ql.grad), ("grad_k", kl.grad), ("grad_v", vl.grad),
                 ("grad_param_w", Wl.grad)]:
        fx.add(n, t)
    return fx


# ---------------------------------------------------------------------------------------

def main():
    torch.set_grad_enabled(True)
    os.makedirs(OUT_DIR, exist_ok=True)
    cases = [
        scaled_dot_case("scaled_dot_plain", 101, B=2, Tq=3, Tk=5, D=7, Dv=6,
                        description="No mask."),
        scaled_dot_case("scaled_dot_key_padding", 102, B=2, Tq=3, Tk=5, D=7, Dv=6,
                        key_lengths=[5, 2], description="Key padding: key_lengths = [5, 2]."),
        scaled_dot_case("scaled_dot_causal", 103, B=2, Tq=3, Tk=5, D=7, Dv=6, causal=True,
                        description="Causal, aligned at the end: j <= i + (Tk - Tq)."),
        scaled_dot_case("scaled_dot_causal_square", 104, B=2, Tq=4, Tk=4, D=5, Dv=3,
                        causal=True, description="Causal self-attention shape (Tq == Tk)."),
        scaled_dot_case("scaled_dot_bias", 105, B=2, Tq=3, Tk=5, D=7, Dv=6, bias_shape=(3, 5),
                        description="Additive float bias [Tq, Tk] (broadcast over B) with -inf "
                                    "entries."),
        scaled_dot_case("scaled_dot_bias_batched_combined", 106, B=2, Tq=3, Tk=5, D=4, Dv=2,
                        key_lengths=[4, 3], causal=True, bias_shape=(2, 3, 5),
                        description="Bias [B, Tq, Tk] with -inf, plus key_lengths = [4, 3] and "
                                    "causal, all combined."),
        scaled_dot_case("scaled_dot_decoder_step", 107, B=2, Tq=1, Tk=5, D=7, Dv=6,
                        key_lengths=[5, 3], causal=True,
                        description="Decoder step Tq = 1: causal sees every key; key_lengths = "
                                    "[5, 3]."),
        scaled_dot_case("scaled_dot_empty_row", 108, B=2, Tq=3, Tk=5, D=7, Dv=6,
                        key_lengths=[0, 4],
                        description="key_lengths = [0, 4]: batch row 0 has no visible key, so "
                                    "its context, weights and gradients are zero (qkv contract; "
                                    "torch would give NaN)."),
        multi_head_case("mha_plain", 201, B=2, Tq=3, Tk=5, E=8, H=2,
                        description="Cross-attention (distinct query, key, value), no mask."),
        multi_head_case("mha_key_padding", 202, B=2, Tq=3, Tk=5, E=8, H=2, key_lengths=[5, 2],
                        description="Cross-attention, key_lengths = [5, 2]."),
        multi_head_case("mha_decoder_step", 203, B=2, Tq=1, Tk=5, E=8, H=2, key_lengths=[3, 5],
                        description="Decoder step Tq = 1, key_lengths = [3, 5]."),
        multi_head_case("mha_causal_self", 204, B=2, Tq=4, Tk=4, E=8, H=2, causal=True,
                        self_attention=True,
                        description="Causal self-attention: query = key = value = x (one "
                                    "variable; grad_x sums the three paths)."),
        additive_case("additive_key_padding", 301, B=2, Tq=3, Tk=5, Dq=4, Dk=6, A=5, Dv=3,
                      key_lengths=[5, 2], description="key_lengths = [5, 2]."),
        additive_case("additive_decoder_step", 302, B=2, Tq=1, Tk=5, Dq=4, Dk=6, A=5, Dv=3,
                      key_lengths=[4, 5], description="Decoder step Tq = 1, key_lengths = [4, 5]."),
        general_case("general_key_padding", 401, B=2, Tq=3, Tk=5, Dq=6, Dk=4, Dv=3,
                     key_lengths=[5, 2], description="key_lengths = [5, 2]."),
        general_case("general_decoder_step", 402, B=2, Tq=1, Tk=5, Dq=6, Dk=4, Dv=3,
                     key_lengths=[3, 5], description="Decoder step Tq = 1, key_lengths = [3, 5]."),
    ]
    for fx in cases:
        path = fx.write()
        print(f"wrote {os.path.relpath(path)} ({os.path.getsize(path)} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

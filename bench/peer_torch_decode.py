#!/usr/bin/python3
"""PyTorch peer for qkv_bench_decode: a qkv model directory's weights
(model.safetensors, the model config in its metadata) loaded into the same model written
out in PyTorch, decoding the same source ids with the same search rules, timed the same
way, so bench/run_decode.sh prints qkv/torch sentences/s and the outputs' agreement.

Run it with Debian's interpreter (python3-torch 1.13), not a pyenv/venv python3:

    /usr/bin/python3 bench/peer_torch_decode.py --model DIR --ids FILE [--beam K]
        [--threads T] [--reps R] [--warmup N] [--mini-batch B] [--out FILE]
    /usr/bin/python3 bench/peer_torch_decode.py --info [--model DIR]

One JSON line per run (the fields of qkv_bench_decode, plus search_s: the seconds of the
median pass spent outside the model, in this script's search bookkeeping; context: torch's
configuration, the model's config and parameter count). --info: the context alone.

The model (src/models/transformer.cpp, detail/transformer_layers.cpp): pre-LN,
  encoder  x += SelfAttn(LN(x)); x += FFN(LN(x)); memory = LN(x)
  decoder  x += SelfAttn(LN(x)) (causal); x += CrossAttn(LN(x), memory); x += FFN(LN(x));
           logits = LN(x) Wᵀ (W: the tied embedding table, or decoder.output)
embeddings ·sqrt(E) + sinusoidal positions, LayerNorm eps 1e-5, ReLU FFN, scaled-dot heads
(scores / sqrt(E/H)), key-padding masks from the source lengths; no dropout (inference).
Incremental decoding with a KV cache: each decoder layer appends the step's self-attention
key and value to its cache ([R, H, t, Dh], torch.cat as qkv's concat), the
cross-attention keys and values are projected once per batch; beam search reorders the
caches with index_select (qkv: DecoderState::reorder). Self-attention projects Q, K, V
with one GEMM over the stacked weights, cross-attention K and V with one (as qkv).
The rnn (src/models/detail/rnn_layers.cpp): see class Rnn; nn.GRU / nn.LSTM take qkv's
recurrent weights unchanged.

The search (src/decode/greedy.cpp, beam_search.cpp, translate.cpp):
  batches   sentences stably sorted by source length, mini-batches of 32, padded to the
            longest (source ids + EOS); outputs scattered back to input order.
  limit     floor(2 · Ts) + 5 tokens (Ts: source length with EOS), at most max_positions.
  greedy    argmax (the first on ties), a row stops at EOS (not written) and leaves the
            batch; every row cut at its own limit.
  beam K    Marian's scheme: per sentence, each live hypothesis proposes its `width` best
            tokens (width starts at K); the `width` best candidates by raw cumulative
            log-probability (summed in float64; ties: earlier hypothesis, then lower id)
            are kept; an EOS candidate finishes and shrinks width by one; at the length
            limit the live ones finish as they are. Finished hypotheses are ranked by
            log_prob / S^0.6, S = tokens + 1 for EOS (a stable sort); the best is output.
"""
import argparse
import json
import math
import os
import resource
import statistics
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

NORMALIZE, LENGTH_FACTOR, LENGTH_EXTRA = 0.6, 2.0, 5  # `qkv translate`'s defaults


# ---- the model file ------------------------------------------------------------------
def load_safetensors(path, torch):
    """{name: float32 tensor}, metadata. The format: an 8-byte little-endian header
    length, a JSON header (dtype, shape, data_offsets per tensor; __metadata__), data."""
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    meta = header.pop("__metadata__", {})
    data = bytearray(raw[8 + n:])
    tensors = {}
    for name, e in header.items():
        if e["dtype"] != "F32":
            raise SystemExit(f"{path}: tensor {name} is {e['dtype']}, expected F32")
        a, b = e["data_offsets"]
        t = torch.frombuffer(data, dtype=torch.float32, count=(b - a) // 4, offset=a)
        tensors[name] = t.reshape(e["shape"]).clone()
    return tensors, meta


def load_model(model_dir, torch):
    path = model_dir if os.path.isfile(model_dir) else os.path.join(model_dir, "model.safetensors")
    if not os.path.exists(path):
        raise SystemExit(f"{model_dir}: no model.safetensors (a model directory of `qkv train`)")
    w, meta = load_safetensors(path, torch)
    if "config" not in meta:
        raise SystemExit(f"{path}: no model config in the metadata (not a qkv model file?)")
    cfg = json.loads(meta["config"])
    model = Transformer(torch, w, cfg) if cfg["type"] == "transformer" else Rnn(torch, w, cfg, path)
    return model, cfg


class Transformer:
    """qkv's Transformer at inference, as plain tensor functions over its weights."""

    def __init__(self, torch, w, cfg):
        self.torch, self.F = torch, torch.nn.functional
        self.cfg = cfg
        e, h = cfg["dim_emb"], cfg["heads"]
        self.e, self.h, self.dh = e, h, e // h
        self.scale = 1.0 / math.sqrt(self.dh)
        self.emb_scale = math.sqrt(e)
        self.src_emb = w["encoder.embeddings.weight"]
        self.tgt_emb = w.get("decoder.embeddings.weight", self.src_emb)
        if cfg["tied_embeddings"]:
            self.out_w, self.out_b = self.tgt_emb, None
        else:
            self.out_w, self.out_b = w["decoder.output.weight"], w.get("decoder.output.bias")
        # Sinusoidal positions as qkv computes them (float64, then float32).
        pos = torch.arange(cfg["max_positions"], dtype=torch.float64).unsqueeze(1)
        cols = torch.arange(e, dtype=torch.float64)
        angle = pos / torch.pow(10000.0, (cols - cols % 2) / e)
        pe = torch.where(cols.long() % 2 == 0, torch.sin(angle), torch.cos(angle))
        self.pe = pe.float()

        def ln(p):
            return (w[p + ".weight"], w[p + ".bias"])

        def lin(p):
            return (w[p + ".weight"], w[p + ".bias"])

        def stacked(p, names):
            return (torch.cat([w[f"{p}.{n}_proj.weight"] for n in names]).contiguous(),
                    torch.cat([w[f"{p}.{n}_proj.bias"] for n in names]).contiguous())

        self.enc = []
        for l in range(cfg["enc_depth"]):
            p = f"encoder.layers.{l}"
            self.enc.append({"ln1": ln(p + ".self_attn_norm"),
                             "qkv": stacked(p + ".self_attn", "qkv"),
                             "out": lin(p + ".self_attn.out_proj"),
                             "ln2": ln(p + ".ffn_norm"),
                             "ff1": lin(p + ".ffn.linear1"), "ff2": lin(p + ".ffn.linear2")})
        self.dec = []
        for l in range(cfg["dec_depth"]):
            p = f"decoder.layers.{l}"
            self.dec.append({"ln1": ln(p + ".self_attn_norm"),
                             "qkv": stacked(p + ".self_attn", "qkv"),
                             "out": lin(p + ".self_attn.out_proj"),
                             "ln2": ln(p + ".cross_attn_norm"),
                             "q": lin(p + ".cross_attn.q_proj"),
                             "kv": stacked(p + ".cross_attn", "kv"),
                             "cout": lin(p + ".cross_attn.out_proj"),
                             "ln3": ln(p + ".ffn_norm"),
                             "ff1": lin(p + ".ffn.linear1"), "ff2": lin(p + ".ffn.linear2")})
        self.enc_norm = ln("encoder.norm")
        self.dec_norm = ln("decoder.norm")
        names = {"encoder.embeddings.weight", "decoder.embeddings.weight", "decoder.output.weight",
                 "decoder.output.bias", "encoder.norm.weight", "encoder.norm.bias",
                 "decoder.norm.weight", "decoder.norm.bias"}
        unused = [n for n in w if n not in names and not n.startswith(("encoder.layers.",
                                                                          "decoder.layers."))]
        if unused:
            raise SystemExit(f"model file: tensors this peer does not know: {unused[:5]}")
        self.params = sum(t.numel() for n, t in w.items())

    def _ln(self, x, p):
        return self.F.layer_norm(x, (self.e,), p[0], p[1], 1e-5)

    def _heads(self, x, n):
        """[B, T, n·E] -> n tensors [B, H, T, Dh]."""
        b, t, _ = x.shape
        x = x.view(b, t, n, self.h, self.dh).permute(2, 0, 3, 1, 4)
        return [x[i].contiguous() for i in range(n)]

    def _attend(self, q, k, v, mask):
        """q [B, H, Tq, Dh], k/v [B, H, Tk, Dh], mask additive [B, 1, 1, Tk] or None."""
        s = self.torch.matmul(q, k.transpose(-1, -2)) * self.scale
        if mask is not None:
            s = s + mask
        a = self.torch.matmul(self.torch.softmax(s, -1), v)  # [B, H, Tq, Dh]
        b, _, tq, _ = a.shape
        return a.transpose(1, 2).reshape(b, tq, self.e)

    def _ffn(self, x, p):
        return self.F.linear(self.F.relu(self.F.linear(x, *p["ff1"])), *p["ff2"])

    def encode(self, src, lengths):
        """src [B, Ts] ids, lengths [B] -> the decoder state for those rows."""
        torch, F = self.torch, self.F
        ts = src.shape[1]
        pad = torch.arange(ts).unsqueeze(0) >= lengths.unsqueeze(1)  # True: padding
        mask = torch.zeros(pad.shape).masked_fill(pad, float("-inf")).view(-1, 1, 1, ts)
        x = F.embedding(src, self.src_emb) * self.emb_scale + self.pe[:ts]
        for p in self.enc:
            q, k, v = self._heads(F.linear(self._ln(x, p["ln1"]), *p["qkv"]), 3)
            x = x + F.linear(self._attend(q, k, v, mask), *p["out"])
            x = x + self._ffn(self._ln(x, p["ln2"]), p)
        memory = self._ln(x, self.enc_norm)
        cross = [self._heads(F.linear(memory, *p["kv"]), 2) for p in self.dec]
        return {"mask": mask, "cross": cross, "self": [None] * len(self.dec)}

    def step(self, state, ids, t):
        """ids [R] at position t -> log-probabilities [R, V]; appends to the caches."""
        torch, F = self.torch, self.F
        x = (F.embedding(ids, self.tgt_emb) * self.emb_scale + self.pe[t]).unsqueeze(1)
        for l, p in enumerate(self.dec):
            q, k, v = self._heads(F.linear(self._ln(x, p["ln1"]), *p["qkv"]), 3)
            cache = state["self"][l]
            if cache is not None:
                k, v = torch.cat([cache[0], k], 2), torch.cat([cache[1], v], 2)
            state["self"][l] = (k, v)
            x = x + F.linear(self._attend(q, k, v, None), *p["out"])
            q = self._heads(F.linear(self._ln(x, p["ln2"]), *p["q"]), 1)[0]
            ck, cv = state["cross"][l]
            x = x + F.linear(self._attend(q, ck, cv, state["mask"]), *p["cout"])
            x = x + self._ffn(self._ln(x, p["ln3"]), p)
        h = self._ln(x[:, 0], self.dec_norm)
        return torch.log_softmax(F.linear(h, self.out_w, self.out_b), -1)

    def select(self, state, rows):
        """Keeps state rows `rows` (a LongTensor), in that order."""
        state["mask"] = state["mask"].index_select(0, rows)
        state["cross"] = [(k.index_select(0, rows), v.index_select(0, rows))
                          for k, v in state["cross"]]
        state["self"] = [(k.index_select(0, rows), v.index_select(0, rows))
                         for k, v in state["self"]]


class Rnn:
    """qkv's rnn encoder-decoder at inference (src/models/detail/rnn_layers.cpp), GRU or
    LSTM, attention none, dot, scaled-dot, general (Luong, optional input feeding) or
    additive (Bahdanau). nn.GRU / nn.LSTM load qkv's weights as they are (PyTorch's names,
    layout and gate order)."""

    def __init__(self, torch, w, cfg, path):
        self.torch, self.F, self.cfg = torch, torch.nn.functional, cfg
        nn = torch.nn
        att = cfg["attention"]
        if att == "cosine":
            raise SystemExit(f"{path}: cosine attention is not written out in this peer")
        self.att, self.hid, self.feeding = att, cfg["dim_rnn"], cfg["input_feeding"]
        self.lstm = cfg["cell"] == "lstm"
        cell = nn.LSTM if self.lstm else nn.GRU
        e, h = cfg["dim_emb"], cfg["dim_rnn"]
        dec_in = e + (h if self.feeding else 0) + (2 * h if att == "additive" else 0)
        self.encoder = cell(e, h, cfg["enc_depth"], batch_first=True, bidirectional=True)
        self.decoder = cell(dec_in, h, cfg["dec_depth"], batch_first=True)
        for mod, prefix in ((self.encoder, "encoder.rnn."), (self.decoder, "decoder.rnn.")):
            mod.load_state_dict({k[len(prefix):]: v for k, v in w.items() if k.startswith(prefix)})
            mod.eval()
        self.src_emb = w["encoder.embeddings.weight"]
        self.tgt_emb = w.get("decoder.embeddings.weight", self.src_emb)
        if cfg["tied_embeddings"]:
            self.out_w, self.out_b = self.tgt_emb, None
        else:
            self.out_w, self.out_b = w["decoder.output.weight"], w.get("decoder.output.bias")
        self.bridge_h = (w["bridge.h.weight"], w["bridge.h.bias"])
        self.bridge_c = (w["bridge.c.weight"], w["bridge.c.bias"]) if self.lstm else None
        self.readout = (w["decoder.readout.weight"], w["decoder.readout.bias"])
        g = w.get
        self.memory_proj, self.combine = g("attention.memory_proj.weight"), g("attention.combine.weight")
        self.att_w, self.att_u, self.att_b, self.att_v = (g("attention.w"), g("attention.u"),
                                                          g("attention.b"), g("attention.v"))
        self.params = sum(t.numel() for t in w.values())

    def encode(self, src, lengths):
        torch, F = self.torch, self.F
        ts, L, H = src.shape[1], self.cfg["dec_depth"], self.hid
        packed = torch.nn.utils.rnn.pack_padded_sequence(F.embedding(src, self.src_emb), lengths,
                                                         batch_first=True, enforce_sorted=False)
        out, finals = self.encoder(packed)
        memory, _ = torch.nn.utils.rnn.pad_packed_sequence(out, batch_first=True, total_length=ts)
        hn = finals[0] if self.lstm else finals
        top = 2 * (self.cfg["enc_depth"] - 1)  # the top layer's forward and reverse cells
        b = src.shape[0]
        h0 = torch.tanh(F.linear(torch.cat([hn[top], hn[top + 1]], -1), *self.bridge_h))
        state = {"h": h0.view(b, L, H).transpose(0, 1).contiguous()}
        if self.lstm:
            cn = finals[1]
            c0 = F.linear(torch.cat([cn[top], cn[top + 1]], -1), *self.bridge_c)
            state["c"] = c0.view(b, L, H).transpose(0, 1).contiguous()
        if self.feeding:
            state["feed"] = torch.zeros(b, H)
        pad = torch.arange(ts).unsqueeze(0) >= lengths.unsqueeze(1)
        state["mask"] = torch.zeros(pad.shape).masked_fill(pad, float("-inf"))  # [B, Ts]
        if self.att == "additive":
            state["keys"], state["values"] = torch.matmul(memory, self.att_u), memory
        elif self.att != "none":
            k = F.linear(memory, self.memory_proj)
            state["keys"], state["values"] = k, k
        return state

    def _cell(self, x, state):
        hidden = (state["h"], state["c"]) if self.lstm else state["h"]
        _, hidden = self.decoder(x.unsqueeze(1), hidden)
        if self.lstm:
            state["h"], state["c"] = hidden
        else:
            state["h"] = hidden

    def _attend(self, scores, state):
        a = self.torch.softmax(scores + state["mask"], -1)  # [R, Ts]
        return self.torch.bmm(a.unsqueeze(1), state["values"]).squeeze(1)

    def step(self, state, ids, t):
        torch, F = self.torch, self.F
        y = F.embedding(ids, self.tgt_emb)  # [R, E]; rnn embeddings are not scaled
        if self.att == "none":
            self._cell(y, state)
            r = F.linear(state["h"][-1], *self.readout)
        elif self.att == "additive":
            q = torch.addmm(self.att_b, state["h"][-1], self.att_w)  # W s_{t-1} + b, [R, A]
            e = torch.matmul(torch.tanh(q.unsqueeze(1) + state["keys"]), self.att_v)  # [R, Ts]
            c = self._attend(e, state)
            self._cell(torch.cat([y, c], -1), state)
            r = torch.tanh(F.linear(torch.cat([state["h"][-1], c, y], -1), *self.readout))
        else:
            self._cell(torch.cat([y, state["feed"]], -1) if self.feeding else y, state)
            h = state["h"][-1]
            q = torch.matmul(h, self.att_w) if self.att == "general" else h
            e = torch.bmm(state["keys"], q.unsqueeze(2)).squeeze(2)  # [R, Ts]
            if self.att == "scaled-dot":
                e = e * (1.0 / math.sqrt(self.hid))
            h_tilde = torch.tanh(F.linear(torch.cat([self._attend(e, state), h], -1), self.combine))
            if self.feeding:
                state["feed"] = h_tilde
            r = F.linear(h_tilde, *self.readout)
        return torch.log_softmax(F.linear(r, self.out_w, self.out_b), -1)

    def select(self, state, rows):
        for k, v in state.items():
            state[k] = v.index_select(1 if k in ("h", "c") else 0, rows)


# ---- the search ------------------------------------------------------------------------
class Timer:
    """Seconds spent inside model calls (the rest of a pass is search bookkeeping)."""

    def __init__(self):
        self.model = 0.0

    def call(self, fn, *args):
        t0 = time.perf_counter()
        r = fn(*args)
        self.model += time.perf_counter() - t0
        return r


def target_limit(cfg, src_len):
    """max_target_length(): floor(2 · Ts) + 5, Ts with EOS; a Transformer's capped by
    max_positions."""
    limit = int(math.floor(LENGTH_FACTOR * src_len)) + LENGTH_EXTRA
    if cfg["type"] == "transformer":
        limit = min(limit, cfg["max_positions"])
    return max(1, limit)


def greedy(model, torch, src, lengths, timer):
    cfg = model.cfg
    limits = [target_limit(cfg, n) for n in lengths.tolist()]
    state = timer.call(model.encode, src, lengths)
    out = [[] for _ in limits]
    active = list(range(len(limits)))
    prev = torch.full((len(active),), cfg["bos_id"], dtype=torch.long)
    for t in range(max(limits)):
        lp = timer.call(model.step, state, prev, t)
        tokens = lp.argmax(-1).tolist()
        keep, next_active, next_prev = [], [], []
        for i, tok in enumerate(tokens):
            if tok == cfg["eos_id"]:
                continue
            out[active[i]].append(tok)
            keep.append(i)
            next_active.append(active[i])
            next_prev.append(tok)
        if not keep:
            break
        if len(keep) != len(active):
            timer.call(model.select, state, torch.tensor(keep))
        active, prev = next_active, torch.tensor(next_prev)
    return [o[:lim] for o, lim in zip(out, limits)]


def beam_search(model, torch, src, lengths, k, timer):
    cfg = model.cfg
    eos = cfg["eos_id"]
    # Per sentence: nodes (token, parent, log p), live [(node, cumulative)], finished
    # [(node, ended with EOS)], width.
    sents = [{"limit": target_limit(cfg, n), "width": k, "nodes": [], "live": [(-1, 0.0)],
              "finished": []} for n in lengths.tolist()]
    state = timer.call(model.encode, src, lengths)
    prev = torch.full((len(sents),), cfg["bos_id"], dtype=torch.long)
    step = 0
    while True:
        lp = timer.call(model.step, state, prev, step)
        values, ids = torch.topk(lp, k, -1)  # sorted, best first
        values, ids = values.tolist(), ids.tolist()
        rows, next_prev, row0 = [], [], 0
        for s in sents:
            live = s["live"]
            if not live:
                continue
            width = s["width"]
            cands = []
            for r, (_, cum) in enumerate(live):
                vr, ir = values[row0 + r], ids[row0 + r]
                for j in range(width):
                    cands.append((-(cum + vr[j]), r, ir[j], vr[j]))
            cands.sort()
            nxt = []
            for negcum, r, tok, v in cands[:width]:
                s["nodes"].append((tok, live[r][0], v))
                node = len(s["nodes"]) - 1
                if tok == eos:
                    s["finished"].append((node, True))
                    s["width"] -= 1
                else:
                    nxt.append((node, -negcum))
                    rows.append(row0 + r)
                    next_prev.append(tok)
            if step + 1 >= s["limit"]:
                s["finished"].extend((node, False) for node, _ in nxt)
                del rows[len(rows) - len(nxt):]
                del next_prev[len(next_prev) - len(nxt):]
                nxt = []
            s["live"] = nxt
            row0 += len(live)
        if not rows:
            break
        if rows != list(range(row0)):
            timer.call(model.select, state, torch.tensor(rows))
        prev = torch.tensor(next_prev)
        step += 1
    out = []
    for s in sents:
        best = None
        for node, ended in s["finished"]:  # first of the best: a stable ranking
            chain = []
            while node >= 0:
                chain.append(node)
                node = s["nodes"][node][1]
            chain.reverse()
            log_prob = 0.0
            for n in chain:
                log_prob += s["nodes"][n][2]
            score = log_prob / math.pow(len(chain), NORMALIZE)
            if best is None or score > best[0]:
                tokens = [s["nodes"][n][0] for n in chain]
                best = (score, tokens[:-1] if ended else tokens)
        out.append(best[1])
    return out


def translate(model, torch, rows, beam, mini_batch, timer):
    """translate_tokens(): stable sort by length, batches of mini_batch, scatter back."""
    cfg = model.cfg
    order = sorted(range(len(rows)), key=lambda i: len(rows[i]))
    out = [None] * len(rows)
    for b in range(0, len(order), mini_batch):
        which = order[b:b + mini_batch]
        ts = max(len(rows[i]) for i in which) + 1
        src = torch.full((len(which), ts), cfg["pad_id"], dtype=torch.long)
        for r, i in enumerate(which):
            src[r, :len(rows[i]) + 1] = torch.tensor(rows[i] + [cfg["eos_id"]])
        lengths = torch.tensor([len(rows[i]) + 1 for i in which])
        hyps = (greedy(model, torch, src, lengths, timer) if beam == 1 else
                beam_search(model, torch, src, lengths, beam, timer))
        for i, h in zip(which, hyps):
            out[i] = h
    return out


def read_ids(path, vocab):
    rows = []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            row = [int(x) for x in line.split()]
            if not row or min(row) < 0 or max(row) >= vocab:
                raise SystemExit(f"{path}:{n}: expected ids in [0, {vocab})")
            rows.append(row)
    if not rows:
        raise SystemExit(f"{path}: no lines")
    return rows


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", metavar="DIR")
    p.add_argument("--ids", metavar="FILE")
    p.add_argument("--beam", type=int, default=4)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--warmup", type=int, default=64, help="sentences decoded untimed first")
    p.add_argument("--mini-batch", type=int, default=32)
    p.add_argument("--out", metavar="FILE")
    p.add_argument("--info", action="store_true")
    a = p.parse_args()
    from peer_torch import find_openblas, torch_context, warm_allocator  # sets OMP_WAIT_POLICY
    warm = warm_allocator()
    import torch
    blas_path, blas = find_openblas()
    if a.info:
        ctx = torch_context(torch, blas_path, blas)
        ctx["allocator"] = "warm (mallopt: no mmap, no trim)" if warm else "glibc default"
        if a.model:
            model, cfg = load_model(a.model, torch)
            ctx["model"] = {"config": cfg, "params": model.params}
        print(json.dumps(ctx))
        return 0
    if not a.model or not a.ids:
        p.error("--model DIR and --ids FILE are required (or --info)")
    if a.beam < 1 or a.threads < 1 or a.reps < 1 or a.mini_batch < 1 or a.warmup < 0:
        p.error("--beam, --threads, --reps and --mini-batch must be >= 1, --warmup >= 0")
    model, cfg = load_model(a.model, torch)
    rows = read_ids(a.ids, cfg["vocab_size"])
    torch.set_num_threads(a.threads)
    if blas is not None:
        blas.openblas_set_num_threads(a.threads)
    with torch.inference_mode():
        if a.warmup:
            translate(model, torch, rows[:a.warmup], a.beam, a.mini_batch, Timer())
        secs, search = [], []
        for _ in range(a.reps):
            timer = Timer()
            t0 = time.perf_counter()
            out = translate(model, torch, rows, a.beam, a.mini_batch, timer)
            secs.append(time.perf_counter() - t0)
            search.append(secs[-1] - timer.model)
    if a.out:
        with open(a.out, "w") as f:
            for h in out:
                f.write(" ".join(map(str, h)) + "\n")
    med = statistics.median(secs)
    tokens = sum(len(h) for h in out)
    ctx = torch_context(torch, blas_path, blas)
    ctx["allocator"] = "warm (mallopt: no mmap, no trim)" if warm else "glibc default"
    ctx["model"] = {"config": cfg, "params": model.params}
    print(json.dumps({"case": f"beam{a.beam}:thr={a.threads}", "sentences": len(rows),
                      "tgt_tokens": tokens, "seconds": [round(s, 4) for s in secs],
                      "sentences_per_s": len(rows) / med, "tokens_per_s": tokens / med,
                      "search_s": search[secs.index(sorted(secs)[len(secs) // 2])],
                      "mini_batch": a.mini_batch,
                      # the process's peak resident set (kB), the torch import included
                      "peak_rss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
                      "context": ctx}))
    return 0


if __name__ == "__main__":
    sys.exit(main())

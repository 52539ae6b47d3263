#!/usr/bin/python3
"""PyTorch peer for qkv_bench_training: the same three models, trained on the same
batches, timed the same way, so bench/run_training.sh prints qkv/torch tokens/s from one
run. Also writes those batches (--make-batches), with the standard library only.

Run it with Debian's interpreter (python3-torch 1.13), not a pyenv/venv python3:

    /usr/bin/python3 bench/peer_torch_training.py --make-batches FILE [--seed 1] [--count 4]
    /usr/bin/python3 bench/peer_torch_training.py --batches FILE [--reps 5] [--warmup 1]
                                                  [--updates 1] CASE...
    /usr/bin/python3 bench/peer_torch_training.py --info

CASE: transformer:thr=N | rnn-additive:thr=N | rnn-none:thr=N. One JSON line per case
(same fields as qkv_bench_training). One update = forward (teacher forcing), label-smoothed
cross-entropy (0.1, pad ignored, mean over target tokens), backward, Adam step
(lr 1e-4, torch.optim.Adam defaults otherwise), then zero_grad(set_to_none=True).

The models are written out to be the same functions as qkv's (src/models/detail/*):
  transformer   pre-LN: x += drop(SelfAttn(LN(x))); [x += drop(CrossAttn(LN(x), mem))];
                x += drop(FFN(LN(x))); a final LayerNorm per stack; embeddings ·sqrt(E) +
                sinusoidal positions, dropout; tied source/target/output table;
                nn.MultiheadAttention (dropout 0, need_weights=False) with key padding
                masks and a causal decoder mask; ReLU FFN without inner dropout.
  rnn-additive  bi-GRU encoder (packed sequences), h0 = tanh(W [h_fwd; h_bwd] + b),
                Bahdanau: e = vᵀ tanh(W s_{t-1} + b + U h_j), masked softmax, c_t feeds
                a GRUCell on [y_{t-1}; c_t]; readout tanh(Linear([s_t; c_t; y_{t-1}]))
                (one GEMM after the loop: it does not feed the recurrence).
  rnn-none      the same encoder and bridge; a GRU decoder over the whole target (the
                bottleneck); readout Linear(s_t).
Dropout 0.1 on the source and target embeddings and the readout (rnn), on embeddings
and every sub-layer output (transformer). Parameter counts are printed next to qkv's.

Threads: torch.set_num_threads(t) and openblas_set_num_threads(t) (float32 GEMMs call the
system OpenBLAS, which keeps its own thread count). Allocation: mallopt (no mmap, no
trim) as in peer_torch.py unless --cold-alloc (qkv_bench_training does the same), so a
200 MB logits tensor reuses warm pages instead of page-faulting a fresh mmap every update.
Each case runs in a fork()ed child; peak_rss_kb is its VmHWM at the end.
"""
import argparse
import json
import math
import os
import resource
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

# ---- the batches, shared with qkv_bench_training ---------------------------------------
VOCAB, PAD, BOS, EOS = 8000, 0, 2, 3
MIN_LEN, MAX_LEN = 8, 30  # real tokens per sequence: source incl. EOS, target BOS + y
TGT_BUDGET = 4096         # real target tokens per batch, at most
FORMAT = "qkv-training-batches 1"


class Lcg:
    """64-bit LCG (Knuth's MMIX constants); draws from the high 32 bits."""

    def __init__(self, seed):
        self.s = (seed * 0x9E3779B97F4A7C15 + 1) % 2**64

    def below(self, n):
        self.s = (self.s * 6364136223846793005 + 1442695040888963407) % 2**64
        return ((self.s >> 32) * n) >> 32


def draw_pair(rng):
    ls = MIN_LEN + rng.below(MAX_LEN - MIN_LEN + 1)
    lt = MIN_LEN + rng.below(MAX_LEN - MIN_LEN + 1)
    src = [4 + rng.below(VOCAB - 4) for _ in range(ls - 1)] + [EOS]
    y = [4 + rng.below(VOCAB - 4) for _ in range(lt - 1)]  # tgt_in = BOS + y
    return src, y


def bucketed_batches(rng, count, pool=16):
    """qkv train's batching rule (data/batch_iterator.cpp) on the same pair distribution:
    pairs for `pool` x `count` batches sorted by (target length, source length), cut
    into batches of up to TGT_BUDGET real target tokens; `count` of them kept, spread
    evenly over the lengths. Little padding, and batches of different lengths.

    The default run's batches: one or two target lengths each (with BOS), sources of
    one sort order, pairs in (target, source) length order:
    >>> batches = bucketed_batches(Lcg(1), 4)
    >>> [len(b) for b in batches]
    [315, 204, 164, 141]
    >>> [sorted({len(y) + 1 for _, y in b}) for b in batches]
    [[13], [20], [24, 25], [29]]
    >>> all([(len(y), len(s)) for s, y in b] == sorted((len(y), len(s)) for s, y in b) for b in batches)
    True
    >>> all(sum(len(y) + 1 for _, y in b) <= TGT_BUDGET for b in batches)
    True
    """
    pairs, toks = [], 0
    while toks < pool * count * TGT_BUDGET:
        pairs.append(draw_pair(rng))
        toks += len(pairs[-1][1]) + 1
    pairs.sort(key=lambda p: (len(p[1]), len(p[0])))
    cut, batch, toks = [], [], 0
    for p in pairs:
        if batch and toks + len(p[1]) + 1 > TGT_BUDGET:
            cut.append(batch)
            batch, toks = [], 0
        batch.append(p)
        toks += len(p[1]) + 1
    return [cut[int((i + 0.5) * len(cut) / count)] for i in range(count)]


def make_batches(path, seed, count, bucketed=False):
    """`count` batches of pairs whose source and target lengths are uniform in [8, 30]
    (no length bucketing: every batch has the same length mix, so timed windows over
    different batches do the same work), each filled up to TGT_BUDGET real target
    tokens. Ids are uniform in [4, VOCAB); 0-3 are pad, unk, bos, eos. bucketed: the
    same pair distribution batched as qkv train does (bucketed_batches)."""
    rng = Lcg(seed)
    picked = bucketed_batches(rng, count) if bucketed else []
    for _ in range(0 if bucketed else count):
        batch, toks = [], 0
        while True:
            ls = MIN_LEN + rng.below(MAX_LEN - MIN_LEN + 1)
            lt = MIN_LEN + rng.below(MAX_LEN - MIN_LEN + 1)
            if toks + lt > TGT_BUDGET:
                break
            src = [4 + rng.below(VOCAB - 4) for _ in range(ls - 1)] + [EOS]
            y = [4 + rng.below(VOCAB - 4) for _ in range(lt - 1)]  # tgt_in = BOS + y
            batch.append((src, y))
            toks += lt
        picked.append(batch)
    with open(path, "w") as f:
        f.write(f"{FORMAT}\nbatches {count} vocab {VOCAB} pad {PAD} bos {BOS} eos {EOS} seed {seed}\n")
        for b in picked:
            ts, tt = max(len(s) for s, _ in b), max(len(y) + 1 for _, y in b)
            f.write(f"batch {len(b)} {ts} {tt}\n")
            f.write(" ".join(str(len(s)) for s, _ in b) + "\n")
            f.write(" ".join(str(len(y) + 1) for _, y in b) + "\n")
            f.write(" ".join(" ".join(map(str, s + [PAD] * (ts - len(s)))) for s, _ in b) + "\n")
            f.write(" ".join(" ".join(map(str, [BOS] + y + [PAD] * (tt - 1 - len(y)))) for _, y in b) + "\n")
            f.write(" ".join(" ".join(map(str, y + [EOS] + [PAD] * (tt - 1 - len(y)))) for _, y in b) + "\n")


def read_batches(path, torch):
    with open(path) as f:
        lines = f.read().split("\n")
    if lines[0] != FORMAT:
        raise SystemExit(f"{path}: not a batch file (first line {lines[0]!r}, expected {FORMAT!r})")
    count = int(lines[1].split()[1])
    out, i = [], 2
    for _ in range(count):
        _, b, ts, tt = lines[i].split()
        b, ts, tt = int(b), int(ts), int(tt)
        ints = [list(map(int, lines[i + k].split())) for k in range(1, 6)]
        out.append({"src_len": torch.tensor(ints[0]), "tgt_len": torch.tensor(ints[1]),
                    "src": torch.tensor(ints[2]).view(b, ts), "tgt_in": torch.tensor(ints[3]).view(b, tt),
                    "tgt_out": torch.tensor(ints[4]).view(b, tt),
                    "tokens": sum(ints[0]) + sum(ints[1]), "tgt_tokens": sum(ints[1])})
        i += 6
    return out


# ---- the models ------------------------------------------------------------------------
def build_model(torch, kind):
    nn, F = torch.nn, torch.nn.functional

    class EncoderLayer(nn.Module):
        def __init__(self, d, heads, ffn, drop):
            super().__init__()
            self.self_attn_norm = nn.LayerNorm(d)
            self.self_attn = nn.MultiheadAttention(d, heads, dropout=0.0, batch_first=True)
            self.ffn_norm = nn.LayerNorm(d)
            self.linear1, self.linear2 = nn.Linear(d, ffn), nn.Linear(ffn, d)
            self.drop = drop

        def forward(self, x, pad):
            n = self.self_attn_norm(x)
            x = x + self.drop(self.self_attn(n, n, n, key_padding_mask=pad, need_weights=False)[0])
            return x + self.drop(self.linear2(F.relu(self.linear1(self.ffn_norm(x)))))

    class DecoderLayer(EncoderLayer):
        def __init__(self, d, heads, ffn, drop):
            super().__init__(d, heads, ffn, drop)
            self.cross_attn_norm = nn.LayerNorm(d)
            self.cross_attn = nn.MultiheadAttention(d, heads, dropout=0.0, batch_first=True)

        def forward(self, x, memory, causal, pad):
            n = self.self_attn_norm(x)
            x = x + self.drop(self.self_attn(n, n, n, attn_mask=causal, need_weights=False)[0])
            n = self.cross_attn_norm(x)
            x = x + self.drop(self.cross_attn(n, memory, memory, key_padding_mask=pad,
                                              need_weights=False)[0])
            return x + self.drop(self.linear2(F.relu(self.linear1(self.ffn_norm(x)))))

    class Transformer(nn.Module):
        def __init__(self, d=256, heads=4, ffn=1024, layers=3, p=0.1, max_pos=1024):
            super().__init__()
            self.d = d
            self.embeddings = nn.Embedding(VOCAB, d)
            nn.init.normal_(self.embeddings.weight, std=d ** -0.5)
            self.drop = nn.Dropout(p)
            self.encoder = nn.ModuleList(EncoderLayer(d, heads, ffn, self.drop) for _ in range(layers))
            self.decoder = nn.ModuleList(DecoderLayer(d, heads, ffn, self.drop) for _ in range(layers))
            self.encoder_norm, self.decoder_norm = nn.LayerNorm(d), nn.LayerNorm(d)
            pos = torch.arange(max_pos, dtype=torch.float64).unsqueeze(1)
            div = torch.pow(10000.0, torch.arange(0, d, 2, dtype=torch.float64) / d)
            pe = torch.zeros(max_pos, d, dtype=torch.float64)
            pe[:, 0::2], pe[:, 1::2] = torch.sin(pos / div), torch.cos(pos / div)
            self.register_buffer("pe", pe.float())

        def embed(self, ids):
            return self.drop(self.embeddings(ids) * math.sqrt(self.d) + self.pe[: ids.shape[1]])

        def forward(self, src, src_len, tgt_in):
            pad = torch.arange(src.shape[1]).unsqueeze(0) >= src_len.unsqueeze(1)  # True: padding
            x = self.embed(src)
            for layer in self.encoder:
                x = layer(x, pad)
            memory = self.encoder_norm(x)
            tt = tgt_in.shape[1]
            causal = torch.ones(tt, tt, dtype=torch.bool).triu(1)  # True: may not attend
            y = self.embed(tgt_in)
            for layer in self.decoder:
                y = layer(y, memory, causal, pad)
            return F.linear(self.decoder_norm(y), self.embeddings.weight)

    class Rnn(nn.Module):
        def __init__(self, attention, e=256, h=256, p=0.1):
            super().__init__()
            self.attention = attention
            self.embeddings = nn.Embedding(VOCAB, e)
            nn.init.normal_(self.embeddings.weight, std=e ** -0.5)
            self.drop = nn.Dropout(p)
            self.encoder = nn.GRU(e, h, batch_first=True, bidirectional=True)
            self.bridge = nn.Linear(2 * h, h)
            if attention:
                self.att_w = nn.Linear(h, h)                 # W s + b   (qkv: w [H, A], b [A])
                self.att_u = nn.Linear(2 * h, h, bias=False)  # U h_j     (qkv: u [2H, A])
                self.att_v = nn.Parameter(torch.empty(h).uniform_(-h ** -0.5, h ** -0.5))
                self.cell = nn.GRUCell(e + 2 * h, h)
                self.readout = nn.Linear(3 * h + e, e)
            else:
                self.decoder = nn.GRU(e, h, batch_first=True)
                self.readout = nn.Linear(h, e)

        def forward(self, src, src_len, tgt_in):
            ts = src.shape[1]
            packed = nn.utils.rnn.pack_padded_sequence(self.drop(self.embeddings(src)), src_len,
                                                       batch_first=True, enforce_sorted=False)
            out, hn = self.encoder(packed)  # hn [2, B, H]: each direction's final state
            memory, _ = nn.utils.rnn.pad_packed_sequence(out, batch_first=True, total_length=ts)
            s = torch.tanh(self.bridge(torch.cat([hn[0], hn[1]], -1)))
            y = self.drop(self.embeddings(tgt_in))  # [B, Tt, E]
            if not self.attention:
                r = self.readout(self.decoder(y, s.unsqueeze(0).contiguous())[0])
            else:
                keys = self.att_u(memory)  # [B, Ts, A], once per batch
                pad = torch.arange(ts).unsqueeze(0) >= src_len.unsqueeze(1)
                states, contexts = [], []
                for t in range(tgt_in.shape[1]):
                    e = torch.tanh(self.att_w(s).unsqueeze(1) + keys) @ self.att_v  # [B, Ts]
                    a = torch.softmax(e.masked_fill(pad, float("-inf")), -1)
                    c = torch.bmm(a.unsqueeze(1), memory).squeeze(1)            # [B, 2H]
                    s = self.cell(torch.cat([y[:, t], c], -1), s)
                    states.append(s)
                    contexts.append(c)
                r = torch.tanh(self.readout(torch.cat([torch.stack(states, 1),
                                                       torch.stack(contexts, 1), y], -1)))
            return F.linear(self.drop(r), self.embeddings.weight)

    if kind == "transformer":
        return Transformer()
    if kind in ("rnn-additive", "rnn-none"):
        return Rnn(kind == "rnn-additive")
    raise SystemExit(f"unknown case kind {kind!r} (transformer, rnn-additive, rnn-none)")


# ---- timing ----------------------------------------------------------------------------
def run_case(torch, blas, name, batches, args):
    F = torch.nn.functional
    kind, *rest = name.split(":")
    opts = dict(kv.split("=") for kv in rest)
    thr = int(opts["thr"])
    torch.set_num_threads(thr)
    if blas is not None:
        blas.openblas_set_num_threads(thr)
    torch.manual_seed(1234)
    model = build_model(torch, kind)
    model.train()
    params = sum(p.numel() for p in model.parameters())  # shared tables counted once
    opt = torch.optim.Adam(model.parameters(), lr=1e-4)
    phase = {"forward": 0.0, "loss": 0.0, "backward": 0.0, "optimizer": 0.0}
    state = {"n": 0, "loss": []}

    def update(timed):
        b = batches[state["n"] % len(batches)]
        state["n"] += 1
        t0 = time.perf_counter()
        logits = model(b["src"], b["src_len"], b["tgt_in"])
        t1 = time.perf_counter()
        loss = F.cross_entropy(logits.view(-1, VOCAB), b["tgt_out"].view(-1), ignore_index=PAD,
                               label_smoothing=0.1)
        state["loss"].append(loss.item())
        t2 = time.perf_counter()
        loss.backward()
        t3 = time.perf_counter()
        opt.step()
        opt.zero_grad(set_to_none=True)
        t4 = time.perf_counter()
        if timed:
            for k, a, z in (("forward", t0, t1), ("loss", t1, t2), ("backward", t2, t3),
                            ("optimizer", t3, t4)):
                phase[k] += z - a
        return b["tokens"], b["tgt_tokens"]

    for _ in range(args.warmup):
        update(False)
    rates, secs, tgt_rates = [], [], []
    rss_warm, faults0 = status_kb("VmHWM"), resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(args.reps):
        toks = tgt = 0
        start = time.perf_counter()
        for _ in range(args.updates):
            a, t = update(True)
            toks, tgt = toks + a, tgt + t
        el = time.perf_counter() - start
        rates.append(toks / el)
        tgt_rates.append(tgt / el)
        secs.append(el / args.updates)
    timed = args.reps * args.updates
    faults = (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults0) / timed
    return {"case": name, "params": params, "tokens_per_s": statistics.median(rates),
            "tgt_tokens_per_s": statistics.median(tgt_rates), "rates": rates,
            "s_per_update": statistics.median(secs),
            "phase_ms": {k: 1e3 * v / timed for k, v in phase.items()},
            "first_loss": state["loss"][0], "last_loss": state["loss"][-1],
            "updates": state["n"], "peak_rss_kb": status_kb("VmHWM"),
            "warmup_peak_rss_kb": rss_warm, "minflt_per_update": faults}


def status_kb(key):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return -1


def in_child(fn):
    """fn() in a fork()ed child; its JSON result (or an error record)."""
    sys.stdout.flush()
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            res = fn()
        except Exception as e:  # noqa: BLE001 -- report, do not hang the table
            res = {"error": repr(e)}
        os.write(w, (json.dumps(res) + "\n").encode())
        os._exit(0)
    os.close(w)
    data = b""
    while chunk := os.read(r, 65536):
        data += chunk
    os.close(r)
    _, ws = os.waitpid(pid, 0)
    return json.loads(data) if data.strip() else {"error": f"child died (wait status {ws})"}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--make-batches", metavar="FILE")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--count", type=int, default=4, help="batches to write")
    p.add_argument("--bucketed", action="store_true",
                   help="with --make-batches: sort pairs by length first, as qkv train does")
    p.add_argument("--batches", metavar="FILE")
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--warmup", type=int, default=1, help="untimed updates first")
    p.add_argument("--updates", type=int, default=1, help="updates per timed window")
    p.add_argument("--cold-alloc", action="store_true", help="keep glibc's malloc defaults")
    p.add_argument("--info", action="store_true")
    p.add_argument("cases", nargs="*")
    a = p.parse_args()
    if a.make_batches:
        make_batches(a.make_batches, a.seed, a.count, a.bucketed)
        return 0
    from peer_torch import find_openblas, torch_context, warm_allocator  # sets OMP_WAIT_POLICY
    warm = False if a.cold_alloc else warm_allocator()
    import torch
    blas_path, blas = find_openblas()
    if a.info:
        ctx = torch_context(torch, blas_path, blas)
        ctx["allocator"] = "warm (mallopt: no mmap, no trim)" if warm else "glibc default"
        print(json.dumps(ctx))
        return 0
    if not a.batches:
        raise SystemExit("--batches FILE is required (write one with --make-batches FILE)")
    batches = read_batches(a.batches, torch)
    status = 0
    for name in a.cases:
        res = in_child(lambda: run_case(torch, blas, name, batches, a))
        res["case"] = name
        status |= "error" in res
        print(json.dumps(res))
        sys.stdout.flush()
    return status


if __name__ == "__main__":
    sys.exit(main())

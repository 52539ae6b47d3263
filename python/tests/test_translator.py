"""qkv.Translator against `qkv translate` / `qkv score` on the same models and flags, the
attention maps, qkv.Vocab, the errors, and two translators in two threads with the GIL
released."""

import threading
import time

import numpy as np
import pytest

import qkv
from conftest import run_qkv


def lines_of(path):
    return path.read_text(encoding="utf-8").splitlines()


@pytest.fixture(scope="module", params=["transformer", "rnn"])
def model(request, transformer_dir, rnn_dir):
    return transformer_dir if request.param == "transformer" else rnn_dir


@pytest.fixture(scope="module")
def sources(corpus):
    # Real sentences, a blank line (an empty output line, as the CLI writes) and a repeat.
    lines = lines_of(corpus[2])
    return lines[:4] + [""] + lines[:1]


@pytest.mark.parametrize("flags", [
    {"beam_size": 1},
    {"beam_size": 3, "normalize": 1.0},
    {"beam_size": 4, "coverage_penalty": 0.2, "max_length_factor": 1.0},
])
def test_translate_equals_cli(model, sources, flags):
    tr = qkv.Translator(model)
    got = tr.translate(sources, **flags)
    cli_flags = [f"--{k.replace('_', '-')}={v}" for k, v in flags.items()]
    out = run_qkv("translate", "--model", model, *cli_flags, stdin="\n".join(sources) + "\n")
    assert [t.text for t in got] == out.stdout.splitlines()
    assert got[4].skipped == "empty line" and not got[4].ok and got[4].hypotheses == []
    assert got[0].text == got[5].text


def test_n_best_and_alignment_equal_cli(model, sources):
    tr = qkv.Translator(model)
    got = tr.translate(sources, beam_size=3, n_best=3, alignment="hard")
    out = run_qkv("translate", "--model", model, "--beam-size", 3, "--n-best", 3,
                  "--alignment", "hard", stdin="\n".join(sources) + "\n")
    expected = []
    for i, t in enumerate(got):
        if not t.ok:
            expected.append(f"{i} |||  ||| -inf ||| ")
        for h in t.hypotheses:
            expected.append(f"{i} ||| {h.text} ||| {h.score:.6f} ||| {h.alignment}")
    assert expected == out.stdout.splitlines()
    soft = tr.translate(sources[:2], alignment="soft")
    out = run_qkv("translate", "--model", model, "--alignment", "soft",
                  stdin="\n".join(sources[:2]) + "\n")
    assert [f"{t.text} ||| {t.hypotheses[0].alignment}" for t in soft] == out.stdout.splitlines()


def test_hypothesis_fields(model, sources):
    tr = qkv.Translator(model)
    h = tr.translate(sources[:1], beam_size=2)[0].hypotheses[0]
    assert h.pieces == [tr.vocab.piece(t) for t in h.tokens]
    assert h.token_log_probs.dtype == np.float32
    assert len(h.token_log_probs) == len(h.tokens) + h.finished
    assert h.log_prob == pytest.approx(float(np.sum(h.token_log_probs.astype(np.float64))),
                                       abs=1e-5)
    assert h.alignment is None and h.attention is None


def test_return_attention_maps(transformer_dir, rnn_dir, sources):
    for model, layers, heads in ((transformer_dir, 2, 2), (rnn_dir, 1, 1)):
        tr = qkv.Translator(model)
        t = tr.translate(sources[:2], beam_size=2, n_best=2, return_attention=True)[1]
        for h in t.hypotheses:
            a = h.attention
            assert (a.layers, a.heads) == (layers, heads)
            assert a.source_tokens == [tr.vocab.piece(i) for i in t.source[:-1]] + ["</s>"]
            assert a.target_tokens == h.pieces + (["</s>"] if h.finished else [])
            assert a.weights.shape == (layers, heads, len(a.target_tokens), len(a.source_tokens))
            np.testing.assert_allclose(a.weights.sum(-1), 1, atol=1e-5)


def test_score_equals_cli(model, corpus):
    tr = qkv.Translator(model)
    src, tgt = lines_of(corpus[2]), lines_of(corpus[3])
    got = tr.score(src, tgt)
    out = run_qkv("score", "--model", model, "--src", corpus[2], "--tgt", corpus[3])
    assert [f"{s.log_prob:.6f} {s.per_token:.6f}" for s in got] == out.stdout.splitlines()
    assert all(s.skipped is None and s.token_log_probs.dtype == np.float32 for s in got)


def test_metadata_and_vocab(transformer_dir, vocab_file):
    tr = qkv.Translator(transformer_dir)
    c = tr.config
    assert c["type"] == "transformer" and c["dec_depth"] == 2 and c["heads"] == 2
    assert tr.update == 6 and tr.attends and tr.qkv_version == qkv.__version__
    assert tr.model_file.name == "model.safetensors"
    v = qkv.Vocab(vocab_file)
    assert len(v) == v.size == tr.vocab.size == c["vocab_size"]
    ids = v.encode("A man is walking.")
    assert v.decode(ids) == "A man is walking."
    assert v.pieces(ids) == v.encode_pieces("A man is walking.")
    assert v.id_of(v.piece(ids[0])) == ids[0]
    assert v.eos_id == c["eos_id"] and v.fingerprint == tr.vocab.fingerprint
    assert "Translator(" in repr(tr) and "translate(" in qkv.Translator.__doc__ + \
        qkv.Translator.translate.__doc__


def test_errors(transformer_dir, rnn_dir, work_dir):
    with pytest.raises(qkv.IoError) as e:
        qkv.Translator(work_dir / "no-such-model")
    assert isinstance(e.value, OSError) and "no-such-model" in str(e.value)
    with pytest.raises(qkv.IoError, match="vocab"):
        qkv.Vocab(work_dir / "missing.spm")
    tr = qkv.Translator(transformer_dir)
    with pytest.raises(TypeError, match="got one string"):
        tr.translate("A dog.")
    with pytest.raises(TypeError, match="list of strings"):
        tr.translate([1, 2])
    with pytest.raises(qkv.ConfigError, match="n_best 4 exceeds beam_size 2"):
        tr.translate(["A dog."], beam_size=2, n_best=4)
    with pytest.raises(ValueError, match="alignment='fuzzy'"):
        tr.translate(["A dog."], alignment="fuzzy")
    with pytest.raises(qkv.ConfigError, match="alignment_layer 5: the model has"):
        tr.translate(["A dog."], alignment="hard", alignment_layer=5)
    with pytest.raises(qkv.InvalidValueError):
        tr.score(["a", "b"], ["a"])
    with pytest.raises(ValueError, match="threads"):
        qkv.Translator(transformer_dir, threads=-1)
    assert tr.translate(["A dog."])[0].ok  # still usable after the errors


def test_two_translators_in_two_threads_run_concurrently(transformer_dir, rnn_dir, sources):
    """Each call releases the GIL: a Python thread keeps running while two others translate,
    and each translator's results equal its results alone."""
    sentences = sources[:4] * 6
    models = [qkv.Translator(transformer_dir), qkv.Translator(rnn_dir)]
    alone = [[t.text for t in m.translate(sentences, beam_size=4)] for m in models]
    results, spans, ticks = [None, None], [None, None], []
    stop = threading.Event()

    def ticker():
        while not stop.is_set():
            ticks.append(time.monotonic())
            time.sleep(0.001)

    def work(i):
        start = time.monotonic()
        results[i] = [t.text for t in models[i].translate(sentences, beam_size=4)]
        spans[i] = (start, time.monotonic())

    tick = threading.Thread(target=ticker)
    tick.start()
    threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    stop.set()
    tick.join()
    assert results == alone
    # Both calls overlapped in time, and the ticker ran while they did.
    (s0, e0), (s1, e1) = spans
    lo, hi = max(s0, s1), min(e0, e1)
    assert lo < hi, "the two translate calls did not overlap"
    inside = [t for t in ticks if lo < t < hi]
    assert len(inside) >= 3, f"the GIL was held during translate ({len(inside)} ticks in {hi - lo:.3f} s)"


def test_one_translator_in_two_threads_takes_turns(transformer_dir, sources):
    tr = qkv.Translator(transformer_dir)
    sentences = sources[:4] * 3
    alone = [t.text for t in tr.translate(sentences, beam_size=3)]
    results = [None] * 4

    def work(i):
        results[i] = [t.text for t in tr.translate(sentences, beam_size=3)]

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert results == [alone] * 4

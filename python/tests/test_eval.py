"""qkv.eval against `qkv eval` on the same files: the score objects and the printed lines."""

import pytest

import qkv
from conftest import run_qkv


def test_bleu_chrf_and_by_length_equal_cli(corpus, work_dir):
    src = corpus[2].read_text(encoding="utf-8").splitlines()
    refs = corpus[3].read_text(encoding="utf-8").splitlines()
    # Hypotheses that differ from the references in ways BLEU sees.
    hyps = [" ".join(r.split()[:-1]) if i % 2 else r.lower() for i, r in enumerate(refs)]
    hyp_file = work_dir / "hyps.de"
    hyp_file.write_text("\n".join(hyps) + "\n", encoding="utf-8")
    out = run_qkv("eval", "--ref", corpus[3], "--by-length", corpus[2], hyp_file).stdout
    bleu = qkv.eval.bleu(hyps, refs)
    chrf = qkv.eval.chrf(hyps, refs)
    buckets = qkv.eval.by_length(src, hyps, refs)
    assert out == f"{bleu}\n{chrf}\n\n{qkv.eval.format_by_length(buckets)}"
    assert 0 < bleu.score < 100 and len(bleu.precisions) == 4 and 0 < bleu.bp <= 1
    assert bleu.signature.startswith("nrefs:1|") and bleu.signature.endswith(qkv.__version__)
    assert str(bleu) == bleu.format(2, True)
    assert buckets[0].label == "1-10" and sum(b.count for b in buckets) == len(hyps)
    assert buckets[-1].bleu is None and buckets[-1].count == 0


def test_several_reference_streams_equal_cli(corpus, work_dir):
    refs = corpus[3].read_text(encoding="utf-8").splitlines()
    other = [r.upper() for r in refs]
    (work_dir / "refs2.de").write_text("\n".join(other) + "\n", encoding="utf-8")
    hyps = [r.lower() for r in refs]
    (work_dir / "hyps2.de").write_text("\n".join(hyps) + "\n", encoding="utf-8")
    out = run_qkv("eval", "--ref", corpus[3], "--ref", work_dir / "refs2.de",
                  work_dir / "hyps2.de").stdout
    bleu = qkv.eval.bleu(hyps, [refs, other])
    assert out.splitlines() == [str(bleu), str(qkv.eval.chrf(hyps, [refs, other]))]
    assert bleu.signature.startswith("nrefs:2|")


def test_eval_errors():
    with pytest.raises(qkv.InvalidValueError, match="2"):
        qkv.eval.bleu(["a b", "c"], ["a b"])
    with pytest.raises(qkv.InvalidValueError):
        qkv.eval.bleu([], [])
    with pytest.raises(TypeError, match="hyps must be a list of strings, got one string"):
        qkv.eval.chrf("a b", ["a b"])
    with pytest.raises(TypeError, match="refs must be"):
        qkv.eval.bleu(["a"], 3)

"""Fixtures of the Python module's tests: the qkv tool and two tiny models it trains.

ctest sets QKV_TOOL (the built qkv program), QKV_SOURCE_DIR (the repository) and
QKV_TEST_WORK (a scratch directory); PYTHONPATH points at the build tree's package.
"""

import gzip
import os
import shutil
import subprocess
from pathlib import Path

import pytest

SOURCE_DIR = Path(os.environ.get("QKV_SOURCE_DIR", Path(__file__).resolve().parents[2]))
TOOL = os.environ.get("QKV_TOOL", "qkv")
WORK = Path(os.environ.get("QKV_TEST_WORK", "/tmp/qkv_python_test"))

# The first lines of the bundled Multi30k: enough for a vocabulary and a few updates.
CORPUS_LINES = 120


def run_qkv(*args, stdin=None, check=True):
    """`qkv ARGS` with `stdin` (str) -> CompletedProcess (text)."""
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)  # the tool links its sanitizer runtimes itself
    proc = subprocess.run([TOOL, *map(str, args)], input=stdin, capture_output=True, text=True,
                          env=env, timeout=240)
    if check and proc.returncode != 0:
        raise AssertionError(f"qkv {' '.join(map(str, args))} failed:\n{proc.stderr}")
    return proc


def _head(gz: Path, out: Path, n: int) -> Path:
    with gzip.open(gz, "rt", encoding="utf-8") as f:
        lines = [next(f) for _ in range(n)]
    out.write_text("".join(lines), encoding="utf-8")
    return out


@pytest.fixture(scope="session")
def corpus():
    """(train.en, train.de, test.en, test.de): small plain-text files."""
    WORK.mkdir(parents=True, exist_ok=True)
    data = SOURCE_DIR / "data" / "multi30k"
    en = _head(data / "train.en.gz", WORK / "train.en", CORPUS_LINES)
    de = _head(data / "train.de.gz", WORK / "train.de", CORPUS_LINES)
    test_en = _head(data / "val.en.gz", WORK / "test.en", 6)
    test_de = _head(data / "val.de.gz", WORK / "test.de", 6)
    return en, de, test_en, test_de


@pytest.fixture(scope="session")
def vocab_file(corpus):
    path = WORK / "vocab.spm"
    if not path.exists():
        run_qkv("vocab", "--train-sets", corpus[0], corpus[1], "--vocab-size", 80, "-o", path)
    return path


def _train(name, corpus, vocab_file, *model_flags):
    model = WORK / name
    shutil.rmtree(model, ignore_errors=True)
    run_qkv("train", "--model", model, "--train-sets", corpus[0], corpus[1], "--vocab",
            vocab_file, "--after", "6u", "--mini-batch-words", 300, "--disp-freq", 100,
            "--seed", 7, "--dropout", 0, *model_flags)
    return model


@pytest.fixture(scope="session")
def transformer_dir(corpus, vocab_file):
    """A Transformer with 2 decoder layers of 2 heads, trained 6 updates by `qkv train`."""
    return _train("transformer", corpus, vocab_file, "--type", "transformer", "--dim-emb", 16,
                  "--dim-ffn", 32, "--enc-depth", 1, "--dec-depth", 2, "--heads", 2)


@pytest.fixture(scope="session")
def rnn_dir(corpus, vocab_file):
    """A Bahdanau (additive attention) GRU, trained 6 updates."""
    return _train("bahdanau", corpus, vocab_file, "--type", "rnn", "--attention", "additive",
                  "--cell", "gru", "--dim-emb", 16, "--dim-rnn", 16, "--enc-depth", 1,
                  "--dec-depth", 1)


@pytest.fixture(scope="session")
def work_dir():
    WORK.mkdir(parents=True, exist_ok=True)
    return WORK

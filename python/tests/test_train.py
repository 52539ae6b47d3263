"""qkv.train: the same run as `qkv train` with the same options, the progress callback,
Ctrl-C that saves the checkpoint, resume, and the option errors."""

import os
import shutil
import signal

import pytest

import qkv
from conftest import run_qkv

TINY = dict(type="rnn", attention="dot", cell="gru", dim_emb=8, dim_rnn=8, enc_depth=1,
            dec_depth=1, mini_batch_words=300, dropout=0, disp_freq=0, seed=3, save_freq=0)


def fresh(work_dir, name):
    d = work_dir / name
    shutil.rmtree(d, ignore_errors=True)
    return d


def test_train_equals_cli_and_reports_progress(corpus, vocab_file, work_dir):
    py_dir, cli_dir = fresh(work_dir, "py_train"), fresh(work_dir, "cli_train")
    updates = []
    summary = qkv.train(py_dir, (corpus[0], corpus[1]), vocab=vocab_file, after="4u",
                        progress=updates.append, log=False, **TINY)
    flags = [a for k, v in TINY.items() for a in (f"--{k.replace('_', '-')}", str(v))]
    run_qkv("train", "--model", cli_dir, "--train-sets", corpus[0], corpus[1], "--vocab",
            vocab_file, "--after", "4u", *flags)
    assert summary["update"] == 4 and summary["stop_reason"] == "updates"
    assert [u["update"] for u in updates] == [1, 2, 3, 4]
    assert all(u["loss"] > 0 and u["tokens_per_second"] > 0 and u["tgt_tokens"] > 0
               for u in updates)
    # The same session: the same model file, bit for bit, and the same recorded options.
    assert (py_dir / "model.safetensors").read_bytes() == \
        (cli_dir / "model.safetensors").read_bytes()
    py_yml = (py_dir / "train.yml").read_text().splitlines()
    cli_yml = (cli_dir / "train.yml").read_text().splitlines()
    assert py_yml[0] == f"model: {py_dir}" and cli_yml[0] == f"model: {cli_dir}"
    assert py_yml[1:] == cli_yml[1:]
    assert qkv.Translator(py_dir).update == 4


def test_ctrl_c_saves_and_resume_continues(corpus, vocab_file, work_dir):
    model = fresh(work_dir, "py_interrupted")
    pid = os.getpid()
    assert pid > 0

    def interrupt_at_2(u):
        if u["update"] == 2:
            os.kill(pid, signal.SIGINT)  # what Ctrl-C does

    with pytest.raises(KeyboardInterrupt):
        qkv.train(model, (corpus[0], corpus[1]), vocab=vocab_file, after="6u",
                  progress=interrupt_at_2, log=False, **TINY)
    assert (model / "train_state.safetensors").exists()
    stopped_at = qkv.Translator(model).update
    assert 2 <= stopped_at < 6
    seen = []
    summary = qkv.train(model, (corpus[0], corpus[1]), after="6u", resume=True,
                        progress=lambda u: seen.append(u["update"]), log=False, **TINY)
    assert summary["update"] == 6 and seen[0] == stopped_at + 1


def test_callback_errors_stop_and_save(corpus, vocab_file, work_dir):
    model = fresh(work_dir, "py_callback_error")

    def fail(u):
        raise RuntimeError(f"stop at {u['update']}")

    with pytest.raises(RuntimeError, match="stop at 1"):
        qkv.train(model, (corpus[0], corpus[1]), vocab=vocab_file, after="5u", progress=fail,
                  log=False, **TINY)
    assert qkv.Translator(model).update == 1


def test_option_errors_name_the_flag(corpus, vocab_file, work_dir):
    model = fresh(work_dir, "py_errors")
    with pytest.raises(qkv.ConfigError, match="--dim-embedding"):
        qkv.train(model, (corpus[0], corpus[1]), dim_embedding=8, log=False)
    with pytest.raises(qkv.ConfigError, match="--heads 3 must divide --dim-emb 8"):
        qkv.train(model, (corpus[0], corpus[1]), vocab=vocab_file, dim_emb=8, heads=3,
                  log=False)
    with pytest.raises(qkv.ConfigError, match="takes two files"):
        qkv.train(model, (corpus[0],), log=False)
    qkv.train(model, (corpus[0], corpus[1]), vocab=vocab_file, after="1u", log=False, **TINY)
    with pytest.raises(qkv.ConfigError, match="already holds a training run; pass --resume"):
        qkv.train(model, (corpus[0], corpus[1]), vocab=vocab_file, after="1u", log=False, **TINY)
    assert "--mini-batch-words" in qkv.train_help() and "train(" in qkv.train.__doc__ + "train("

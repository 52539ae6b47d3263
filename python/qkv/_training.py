"""qkv.train: `qkv train` from Python, with the same options."""

import os

from . import _qkv


def _text(value):
    return os.fspath(value) if hasattr(value, "__fspath__") else str(value)


def _flag_args(name, value):
    """One keyword argument as `qkv train` flags: dim_emb=16 -> ["--dim-emb", "16"]; True is
    a switch, False and None leave the flag out, a list or tuple gives several values."""
    flag = "--" + name.replace("_", "-")
    if value is None or value is False:
        return []
    if value is True:
        return [flag]
    if isinstance(value, (list, tuple)):
        return [flag, *map(_text, value)]
    return [flag, _text(value)]


def train(model_dir, train, valid=None, *, progress=None, log=True, **options):
    """Trains a model into model_dir, as `qkv train --model model_dir` does.

    train: (source file, target file), plain text or .gz, one sentence per line; valid: the
    same for validation (cross-entropy and BLEU every valid_freq updates), or None.
    options: `qkv train`'s flags in snake_case, with the CLI's defaults and checks, e.g.
    type="rnn", attention="additive", dim_emb=256, after="5e", vocab="vocab.spm",
    vocab_size=8000, learn_rate=1e-3, seed=1, resume=True (continue the run saved in
    model_dir, bit-exactly). qkv.train_help() lists every option. Errors name the flag
    (`--dim-emb`), as the CLI's do.

    progress: called after every update with a dict: update, epoch, loss (label-smoothed
    cross-entropy per target token), learning_rate, grad_norm, applied, src_tokens,
    tgt_tokens, tokens_per_second (source + target tokens per second of this session).
    log: print the CLI's progress and data lines on the process's stderr (in a notebook:
    the server's terminal; use progress to show them in the notebook).

    Ctrl-C (KeyboardInterrupt), or an exception raised by progress, stops training after the
    current update; the checkpoint is saved as `qkv train` saves it on Ctrl-C, and then the
    exception propagates: train(..., resume=True) continues. The GIL is released while it
    trains. Returns a dict: stop_reason ('updates', 'epochs', 'wall_time', 'early_stopping'
    or 'interrupted'), stop_message (the CLI's words for it), update, epoch, tokens_seen,
    wall_seconds, best_valid_loss, best_valid_bleu.
    """
    args = ["--model", os.fspath(model_dir)]
    args += _flag_args("train_sets", list(train))
    if valid is not None:
        args += _flag_args("valid_sets", list(valid))
    for name, value in options.items():
        args += _flag_args(name, value)
    return _qkv._train(args, progress, log)


def train_help():
    """Every option of qkv.train with its default (the text of `qkv train --help`)."""
    return _qkv._train_help()

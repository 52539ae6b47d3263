"""qkv: attention-based sequence-to-sequence models, from Python.

The C++ library's API on Python objects and numpy arrays:

- ``qkv.attention``: every score function (scaled dot, dot, cosine, general, additive) with
  masks, multi-head attention in PyTorch's layout, and their gradients, on numpy arrays;
- ``qkv.Translator``: a model trained by ``qkv train``: translate (beam search, n-best,
  word alignment, every attention map), score; ``qkv.Vocab``;
- ``qkv.eval``: BLEU and chrF as sacreBLEU computes them, per source-length bucket;
- ``qkv.train``: ``qkv train`` with the same options (snake_case), a progress callback,
  Ctrl-C that saves the checkpoint, resume.

Every compute call releases the GIL. Errors from the library are qkv.Error subclasses that
are also the built-in exception a Python user expects (qkv.ShapeError is a ValueError,
qkv.IoError an OSError, ...), with the library's message.
"""

from . import _qkv
from ._errors import (
    ConfigError,
    Error,
    InternalError,
    InvalidValueError,
    IoError,
    OutOfRangeError,
    ResourceError,
    ShapeError,
)
from ._qkv import (
    AttentionMaps,
    Hypothesis,
    Score,
    Translation,
    Translator,
    Vocab,
)
from . import attention, eval
from ._training import train, train_help

__version__ = _qkv.__version__

__all__ = [
    "AttentionMaps", "ConfigError", "Error", "Hypothesis", "InternalError",
    "InvalidValueError", "IoError", "OutOfRangeError", "ResourceError", "Score", "ShapeError",
    "Translation", "Translator", "Vocab", "attention", "eval", "train", "train_help",
    "__version__",
]

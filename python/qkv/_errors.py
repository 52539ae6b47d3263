"""qkv's typed errors as Python exceptions.

Each C++ error kind (qkv/base/error.h) is a subclass of :class:`Error` and of the built-in
exception a Python user would catch for it, so ``except ValueError`` works as well as
``except qkv.ShapeError``. The message is the library's, unchanged: it names the shape,
file, field or option and says what to do.
"""


class Error(Exception):
    """Base of every error qkv raises from its library."""


class ShapeError(Error, ValueError):
    """Array shapes that do not fit together (the message names both)."""


class InvalidValueError(Error, ValueError):
    """An argument with a bad value (the C++ ``qkv::ValueError``)."""


class OutOfRangeError(Error, IndexError):
    """An index outside its range, e.g. a token id >= the vocabulary size."""


class IoError(Error, OSError):
    """Reading or writing a file failed, or the file is malformed (names the file)."""


class ConfigError(Error, ValueError):
    """An option or configuration value is invalid (names the option)."""


class ResourceError(Error, MemoryError):
    """A request for more memory than is available or sensible."""


class InternalError(Error, RuntimeError):
    """A broken internal invariant: a bug in qkv, please report it."""

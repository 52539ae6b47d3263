"""The package itself: its version is CMake's, every public name is documented, and the
exceptions are the built-in kinds Python code catches."""

import inspect
import re

import qkv
from conftest import SOURCE_DIR


def test_version_is_the_projects():
    cmake = (SOURCE_DIR / "CMakeLists.txt").read_text()
    assert qkv.__version__ == re.search(r"project\(qkv VERSION ([0-9.]+)", cmake).group(1)


def public_callables():
    for module in (qkv, qkv.attention, qkv.eval):
        for name in getattr(module, "__all__", dir(module)):
            obj = getattr(module, name)
            if name.startswith("_") or not callable(obj) or isinstance(obj, type) and \
                    issubclass(obj, BaseException):
                continue
            yield f"{module.__name__}.{name}", obj
            if isinstance(obj, type):
                for attr, member in vars(obj).items():
                    if not attr.startswith("_") and callable(member):
                        yield f"{module.__name__}.{name}.{attr}", member


def test_every_public_function_and_class_has_a_docstring():
    undocumented = []
    for name, obj in public_callables():
        doc = inspect.getdoc(obj) or ""
        # pybind11 puts the signature first; a documented function says more than that.
        text = "\n".join(line for line in doc.splitlines() if not re.match(r"^\w+\(.*\) ->", line))
        if not text.strip():
            undocumented.append(name)
    assert undocumented == []


def test_exceptions_are_builtin_kinds():
    assert issubclass(qkv.ShapeError, ValueError) and issubclass(qkv.ConfigError, ValueError)
    assert issubclass(qkv.IoError, OSError) and issubclass(qkv.InvalidValueError, ValueError)
    assert issubclass(qkv.OutOfRangeError, IndexError)
    assert all(issubclass(e, qkv.Error) for e in (qkv.ShapeError, qkv.IoError,
                                                   qkv.ConfigError, qkv.ResourceError))

"""Objects named "package.module:attribute", imported only when a flag asks for them.

The compiler's servers take their measurement backend this way (--measure-backend,
default kernels.tasks:measurer): the compiler never imports the runtime or the
kernels, which sit above it. Names are written as in the monorepo; in the installed
wheel the packages live under `cake.`, and the name is looked up there.
"""

import importlib

# This installation's prefix for the monorepo's packages: "" in the monorepo, "cake." in the wheel.
PREFIX = __name__[: -len("compiler.plugins")]
_OURS = ("compiler", "runtime", "kernels")


def load(name):
    """The object `name` ("package.module:attribute") names; ValueError saying what is wrong."""
    module, sep, attr = name.partition(":")
    if not sep or not module or not attr:
        raise ValueError("expected 'package.module:attribute', got %r" % name)
    if PREFIX and module.split(".")[0] in _OURS:
        module = PREFIX + module
    try:
        return getattr(importlib.import_module(module), attr)
    except AttributeError:
        raise ValueError("module %s has no %r" % (module, attr)) from None

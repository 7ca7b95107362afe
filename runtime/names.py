"""Functions named as "package.module:function": how work crosses into a worker process.

A spawned worker cannot receive closures, so tasks, contracts and kernel bindings
travel as importable names and are resolved on the other side. Names are written as
in the monorepo ("runtime.evaluate:run"); in the installed wheel, where the packages
live under `cake.`, resolve finds them there, so one name serves both layouts.
"""

import importlib

# This installation's prefix for the monorepo's packages: "" in the monorepo, "cake." in the wheel.
_PREFIX = __name__[: -len("runtime.names")]
_OURS = ("compiler", "runtime", "kernels", "agent")


def resolve(name):
    """The object that "package.module:attribute" names; ValueError saying what is missing."""
    module_name, sep, attr = name.partition(":")
    if not sep or not module_name or not attr:
        raise ValueError("expected 'package.module:function', got %r" % name)
    if _PREFIX and module_name.split(".")[0] in _OURS:
        module_name = _PREFIX + module_name
    module = importlib.import_module(module_name)
    try:
        return getattr(module, attr)
    except AttributeError:
        raise ValueError("module %s has no %r (from %r)" % (module_name, attr, name)) from None

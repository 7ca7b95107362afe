"""Functions named as "package.module:function": how work crosses into a worker process.

A spawned worker cannot receive closures, so tasks, contracts and kernel bindings
travel as importable names and are resolved on the other side.
"""

import importlib


def resolve(name):
    """The object that "package.module:attribute" names; ValueError saying what is missing."""
    module_name, sep, attr = name.partition(":")
    if not sep or not module_name or not attr:
        raise ValueError("expected 'package.module:function', got %r" % name)
    module = importlib.import_module(module_name)
    try:
        return getattr(module, attr)
    except AttributeError:
        raise ValueError("module %s has no %r (from %r)" % (module_name, attr, name)) from None

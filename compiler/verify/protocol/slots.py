"""Shallow copies of the protocol model's state objects (classes with __slots__), as straight-line code.

A forked model state (simulate.Model.copy, forks.py) copies every thread class, mbarrier slot and memory access;
a loop of getattr/setattr over `__slots__` cost more than the rest of the copy. `copier(cls)` builds, once per
class, a function that assigns each slot in turn (as dataclasses and namedtuple build their methods); the caller
then replaces what ops change in place.
"""


def copier(cls):
    """A function obj -> a new `cls` whose every slot (cls.__slots__) holds obj's value."""
    lines = ["def copy(self):", "    new = _new(cls)"]
    lines += ["    new.%s = self.%s" % (name, name) for name in cls.__slots__]
    lines.append("    return new")
    scope = {"_new": object.__new__, "cls": cls}
    exec("\n".join(lines), scope)  # noqa: S102  (the source is built from the class's own slot names)
    return scope["copy"]

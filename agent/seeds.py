"""Seed families: parameterized schedule builders the search starts from and moves within.

A family is a builder in kernels/ plus the values each of its parameters may take
(ordered, so a tactic can step up or down: agent/tactics.for_family derives those
moves from this space) and the kernel contract its kernels implement. Families are
data: each contract file of the task registry (agent/tasks/contracts/) lists the
families that implement it, and the registry holds how the runtime launches and
checks their kernels. The tasks start
from the naive seeds (kernels/*/naive.py: one warpgroup, plain loads, no ring) and
reach everything else through IR transformations (agent/transforms); the richer
families (the KMeans seed schedule, the hand-tuned one) stay available with
--seed-family, the hand-tuned one as the answer, not a start.
"""

import dataclasses
import importlib


@dataclasses.dataclass(frozen=True)
class Family:
    """A schedule builder and its parameter space."""

    name: str
    builder: str  # "package.module:function" taking the params as keyword arguments
    space: dict  # param -> ordered tuple of allowed values
    defaults: dict  # the seed's params (must lie in the space)
    contract_key: str  # the kernel contract its kernels implement (agent/tasks/contracts/<key>.json)
    doc: str = ""

    def build(self, params, fixed):
        """The Kernel for `params` (plus the task's `fixed` params such as d and dtype)."""
        module, _, attr = self.builder.partition(":")
        return getattr(importlib.import_module(module), attr)(**fixed, **params)

    def step(self, params, name, delta):
        """`params` with `name` moved `delta` places along its space; None at the edge or if unknown."""
        values = self.space.get(name)
        if values is None or params.get(name) not in values:
            return None
        i = values.index(params[name]) + delta
        if not 0 <= i < len(values):
            return None
        return {**params, name: values[i]}

    def analysis_shapes(self, shapes, kernel):
        """The symbols the cost model analyzes `kernel` at: the task's shapes and what the binding derives from
        them and the kernel's tiles (its contract's `symbols`), restricted to the symbols the kernel declares."""
        from agent import task
        from agent.ir_edit import tile_rows

        out = dict(shapes)
        derive = task.contract(self.contract_key).symbols
        if derive:
            module, _, attr = derive.partition(":")
            out.update(getattr(importlib.import_module(module), attr)(shapes, tile_rows(kernel)))
        declared = {s.name for s in kernel.contract.symbols}
        return {k: v for k, v in out.items() if k in declared}

    @property
    def binding(self):
        """How the runtime launches this family's kernels: its contract's binding."""
        from agent import task

        return task.contract(self.contract_key).binding

    @property
    def contract(self):
        """The runtime contract (oracle and timer) of this family's kernels, as "package.module:function"."""
        from agent import task

        return task.contract(self.contract_key).runtime


def _families():
    from agent import task

    out = {}
    for c in task.CONTRACTS.values():
        for name, f in c.families.items():
            if name in out:
                raise task.RegistryError("%s: family %r is declared twice" % (c.path, name))
            out[name] = Family(name=name, builder=f["builder"], space={k: tuple(v) for k, v in f["space"].items()},
                               defaults=dict(f["defaults"]), contract_key=c.key, doc=f.get("doc", ""))
    return out


FAMILIES = _families()


def family(name):
    """The Family called `name`; ValueError listing the known ones."""
    try:
        return FAMILIES[name]
    except KeyError:
        raise ValueError("unknown seed family %r (known: %s)" % (name, ", ".join(FAMILIES))) from None

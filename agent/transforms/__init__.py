"""The library of structural IR transformations: edits of a kernel's schedule that keep what it computes.

Each transformation is `fn(kernel, **args) -> kernel` in its own file, with its
precondition (`precondition(kernel, **args)`, raising NotApplicable with the reason)
written out in the module docstring and checked before the rewrite, and its property
test beside it (`<file>_test.py`: the transformation applied to every program of the
test corpus, agent/transforms/testing.py, where its precondition holds, each result
verifying clean; the gpu-marked part runs both on the GPU and compares their outputs).
The input is never modified. Transformations work on any kernel of the right shape,
whoever wrote it (a seed family, an earlier transformation, an LLM).

TRANSFORMS maps the names knowledge/tactics.json and genomes use to the Transformation;
`apply(kernel, name, args)` runs one. From the naive seeds (kernels/*/naive.py) the
structural ones reach a warp-specialized TMA + wgmma schedule:

    loads_to_tma -> split_producer -> mma_to_wgmma -> tile_shape -> persistent -> ring_depth -> ...
"""

import dataclasses
import inspect

from agent import rewrites
from agent.ir_edit import NotApplicable
from agent.transforms import registers, retarget, ring_depth, split_roles, tile_shape, tma_ring, wgmma


@dataclasses.dataclass(frozen=True)
class Transformation:
    name: str
    fn: object  # (kernel, **args) -> kernel
    precondition: object  # (kernel, **args) -> anything; raises NotApplicable with the reason
    doc: str


def _no_precondition(fn):
    """A rewrite that checks its precondition as it edits: the precondition is the rewrite on a copy."""
    def check(kernel, **args):
        fn(kernel, **args)
    return check


def _entry(name, fn, precondition=None):
    doc = (fn.__doc__ or "").strip().split("\n")[0]
    return Transformation(name, fn, precondition or _no_precondition(fn), doc)


TRANSFORMS = {
    t.name: t
    for t in (
        _entry("retarget", retarget.retarget, retarget.precondition),
        _entry("loads_to_tma", tma_ring.loads_to_tma, tma_ring.precondition),
        _entry("tma_to_loads", tma_ring.tma_to_loads),
        _entry("split_producer", split_roles.split_producer, split_roles.precondition),
        _entry("mma_to_wgmma", wgmma.mma_to_wgmma, wgmma.precondition),
        _entry("tile_shape", tile_shape.tile_shape, tile_shape.precondition),
        _entry("ring_depth", ring_depth.ring_depth, ring_depth.precondition),
        _entry("registers", registers.registers),
        _entry("rebalance_registers", registers.rebalance_registers, registers.precondition),
        *(_entry(name, fn) for name, fn in rewrites.REWRITES.items()),
    )
}


def apply(kernel, name, args):
    """Apply transformation `name` with `args` (a dict); NotApplicable when its precondition does not hold."""
    t = TRANSFORMS.get(name)
    if t is None:
        raise NotApplicable("unknown transformation %r" % name)
    try:
        inspect.signature(t.fn).bind(kernel, **args)
    except TypeError as e:
        raise NotApplicable("%s does not take %s (%s)" % (name, sorted(args), e)) from None
    return t.fn(kernel, **args)


__all__ = ["NotApplicable", "TRANSFORMS", "Transformation", "apply"]

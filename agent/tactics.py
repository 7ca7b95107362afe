"""Tactics: the search's moves, kept as data in knowledge/tactics.json.

A tactic is `param` (step a seed family's parameter), `rewrite` (an IR rewrite from
agent/rewrites.py with args) or `drop` (undo one earlier rewrite), with a prior
weight. Args may name parts of the kernel by role instead of by name (@producer,
@consumer, @ring, @resident, @main) and register budgets by delta; `apply` resolves
them against the parent's kernel, so the child's genome records concrete values.
"""

import collections
import dataclasses
import json

from cake.ir.v1 import ir_pb2

from agent import genome as genome_mod
from agent import rewrites, seeds
from agent.learn import knowledge

KINDS = ("param", "rewrite", "drop")


@dataclasses.dataclass(frozen=True)
class Tactic:
    name: str
    kind: str
    weight: float
    doc: str
    param: str = ""
    step: int = 0
    rewrite: str = ""
    args: dict = dataclasses.field(default_factory=dict)


class TacticError(ValueError):
    """tactics.json is malformed; the message names the tactic and the problem."""


def from_data(data):
    """Tactics by name from a parsed tactics.json."""
    out = {}
    for item in data.get("tactics", []):
        name = item.get("name")
        if not name or name in out:
            raise TacticError("tactic %r: missing or duplicate name" % name)
        kind = item.get("kind")
        if kind not in KINDS:
            raise TacticError("tactic %s: kind must be one of %s" % (name, ", ".join(KINDS)))
        weight = item.get("weight", 1.0)
        if not isinstance(weight, (int, float)) or not weight > 0:
            raise TacticError("tactic %s: weight must be positive" % name)
        if kind == "rewrite" and item.get("rewrite") not in rewrites.REWRITES:
            raise TacticError("tactic %s: unknown rewrite %r" % (name, item.get("rewrite")))
        if kind == "param" and (not item.get("param") or not item.get("step")):
            raise TacticError("tactic %s: a param tactic needs param and a non-zero step" % name)
        out[name] = Tactic(name=name, kind=kind, weight=float(weight), doc=item.get("doc", ""),
                           param=item.get("param", ""), step=int(item.get("step", 0)),
                           rewrite=item.get("rewrite", ""), args=dict(item.get("args", {})))
    if not out:
        raise TacticError("no tactics")
    return out


def load(source):
    """(tactics by name, the file's version) from tactics.json of `source` (a Knowledge or a directory)."""
    data = knowledge.of(source).load(knowledge.TACTICS)
    return from_data(data), data["version"]


@dataclasses.dataclass(frozen=True)
class Subject:
    """What a tactic applies to: a kernel, with the genome that made it when there is one."""

    kernel: object  # ir_pb2.Kernel
    genome: object  # genome.Genome or None


def _first_role(kernel, kinds):
    for role in kernel.roles:
        if role.kind in kinds:
            return role
    raise rewrites.NotApplicable("no role of kind %s" % "/".join(ir_pb2.RoleKind.Name(k) for k in kinds))


def _swizzled(kernel, in_ring):
    ring = {name for p in kernel.pipelines for name in p.regions}
    for region in kernel.regions:
        if (region.space == ir_pb2.MEMORY_SPACE_SHARED and region.swizzle != ir_pb2.SWIZZLE_NONE_UNSPECIFIED
                and (region.name in ring) == in_ring):
            return region.name
    raise rewrites.NotApplicable("no swizzled %s region" % ("ring" if in_ring else "resident"))


def _main_loop(kernel):
    consumer = _first_role(kernel, (ir_pb2.ROLE_KIND_CONSUMER, ir_pb2.ROLE_KIND_COMPUTE))
    for _, _, op in rewrites.walk_ops(consumer.body):
        if op.WhichOneof("kind") == "loop" and op.loop.kind == ir_pb2.LOOP_KIND_SERIAL_UNSPECIFIED and any(
                inner.WhichOneof("kind") == "mma" for _, _, inner in rewrites.walk_ops(op.loop.body)):
            return op.loop.var
    raise rewrites.NotApplicable("no loop around an MMA")


_SELECTORS = {
    "@producer": lambda k: _first_role(k, (ir_pb2.ROLE_KIND_PRODUCER,)).name,
    "@consumer": lambda k: _first_role(k, (ir_pb2.ROLE_KIND_CONSUMER, ir_pb2.ROLE_KIND_COMPUTE)).name,
    "@ring": lambda k: _swizzled(k, True),
    "@resident": lambda k: _swizzled(k, False),
    "@main": _main_loop,
}
_TARGET_ARGS = ("role", "region", "var")


def resolve_args(tactic, kernel):
    """(genome key, concrete args) of a rewrite tactic on `kernel`."""
    args = {k: (_SELECTORS[v](kernel) if isinstance(v, str) and v in _SELECTORS else v) for k, v in tactic.args.items()}
    if "delta" in args:
        role = next((r for r in kernel.roles if r.name == args.get("role")), None)
        if role is None or not role.registers:
            raise rewrites.NotApplicable("role %r has no register budget to move" % args.get("role"))
        args["value"] = role.registers + args.pop("delta")
    target = next((args[k] for k in _TARGET_ARGS if k in args), None)
    return (tactic.rewrite if target is None else "%s:%s" % (tactic.rewrite, target)), args


def apply(tactic, subject, fixed, rng):
    """The child Subject of `tactic` on `subject`; rewrites.NotApplicable when the move does not exist."""
    g = subject.genome
    if tactic.kind == "param":
        if g is None:
            raise rewrites.NotApplicable("no genome: the kernel was not built from a seed family")
        params = seeds.family(g.family).step(g.params, tactic.param, tactic.step)
        if params is None:
            raise rewrites.NotApplicable("%s cannot step %+d from %s" % (tactic.param, tactic.step, g.params))
        child = g.with_params(params)
    elif tactic.kind == "drop":
        if g is None or not g.rewrites:
            raise rewrites.NotApplicable("no rewrite to drop")
        child = g.without_rewrite(rng.choice(sorted(g.rewrites)))
    else:
        key, args = resolve_args(tactic, subject.kernel)
        if g is None:
            return Subject(rewrites.apply(subject.kernel, tactic.rewrite, args), None)
        if g.rewrites.get(key) == args:
            raise rewrites.NotApplicable("the genome has %s already" % key)
        child = g.with_rewrite(key, args)
    return Subject(materialize(child, fixed), child)


_MATERIALIZED = collections.OrderedDict()  # (genome, fixed) -> kernel or NotApplicable, most recent last
CACHE_SIZE = 4096


def materialize(g, fixed):
    """The genome's kernel; NotApplicable when the builder rejects its params or a rewrite no longer applies.

    Results (failures included) are cached: the search revisits neighbours often, and
    kernels are never modified after they are built (rewrites copy).
    """
    key = (g.to_json(), json.dumps(fixed, sort_keys=True))
    hit = _MATERIALIZED.get(key)
    if hit is None:
        try:
            hit = genome_mod.materialize(g, fixed)
        except rewrites.NotApplicable as e:
            hit = e
        except (ValueError, AssertionError, KeyError) as e:
            hit = rewrites.NotApplicable("the family does not build %s: %s" % (g.describe(), e))
        _MATERIALIZED[key] = hit
        if len(_MATERIALIZED) > CACHE_SIZE:
            _MATERIALIZED.popitem(last=False)
    else:
        _MATERIALIZED.move_to_end(key)
    if isinstance(hit, rewrites.NotApplicable):
        raise hit
    return hit

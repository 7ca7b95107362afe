"""Tactics: the search's moves: IR transformations kept as data in knowledge/tactics.json, parameter steps
derived from the seed family's declared space.

A tactic is `param` (step a seed family's parameter), `rewrite` (a transformation of
agent/transforms with args), `drop` (undo one earlier rewrite) or `macro` (rewrite
tactics of the same file applied in order as one move: agent/learn/macros.py mines
them from lineages that kept improving), with a prior weight. Param tactics are not
written by hand: `for_family` makes `<param>_up` and `<param>_down` for every parameter
of the family's space (agent/seeds.py), weighted by tactics.json's `param_weights` (1.0
when it has none). Args may name parts of the
kernel by what they do instead of by name (@producer, @consumer, @ring, @resident,
@main, @grid0, @grid1, @loop_axis, @stream_ring, @resident_ring), register budgets by
delta, tile sizes by scale and ring depths by stages_delta; `apply` resolves them
against the parent's kernel, so the child's genome records concrete values.
"""

import collections
import dataclasses
import json

from cake.ir.v1 import ir_pb2

from agent import genome as genome_mod
from agent import seeds, transforms
from agent.ir_edit import NotApplicable, exprs_under, walk_ops
from agent.learn import knowledge
from agent.transforms import axes

KINDS = ("param", "rewrite", "drop", "macro")


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
    steps: tuple = ()  # a macro's rewrite tactics, in order


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
        if kind == "rewrite" and item.get("rewrite") not in transforms.TRANSFORMS:
            raise TacticError("tactic %s: unknown rewrite %r" % (name, item.get("rewrite")))
        if kind == "param" and (not item.get("param") or not item.get("step")):
            raise TacticError("tactic %s: a param tactic needs param and a non-zero step" % name)
        out[name] = Tactic(name=name, kind=kind, weight=float(weight), doc=item.get("doc", ""),
                           param=item.get("param", ""), step=int(item.get("step", 0)),
                           rewrite=item.get("rewrite", ""), args=dict(item.get("args", {})))
    if not out:
        raise TacticError("no tactics")
    for item in data.get("tactics", []):
        if item["kind"] == "macro":
            out[item["name"]] = dataclasses.replace(out[item["name"]], steps=_macro_steps(item, out))
    return out


def _macro_steps(item, tactics):
    steps = item.get("steps")
    if not isinstance(steps, list) or len(steps) < 2:
        raise TacticError("tactic %s: a macro needs steps, a list of at least two tactic names" % item["name"])
    unknown = [s for s in steps if s not in tactics or tactics[s].kind != "rewrite"]
    if unknown:
        raise TacticError("tactic %s: steps must name rewrite tactics of this file; not %s" % (item["name"], unknown))
    return tuple(tactics[s] for s in steps)


def for_family(family, weights=None):
    """`<param>_up` and `<param>_down` for every parameter of `family`'s declared space (agent/seeds.Family)."""
    weights = weights or {}
    out = {}
    for param, values in sorted(family.space.items()):
        for suffix, step, way in (("up", 1, "to the next larger"), ("down", -1, "to the next smaller")):
            name = "%s_%s" % (param, suffix)
            out[name] = Tactic(name=name, kind="param", weight=float(weights.get(name, 1.0)), param=param, step=step,
                               doc="%s %s value of %s" % (param, way, list(values)))
    return out


def load(source, family=None, mode=None):
    """(tactics by name, the file's version) from tactics.json of `source` (a Knowledge or a directory), with
    the param tactics of `family` (a seed family name) when given, weighted for a run of `family` in `mode`
    where the file has learned weights for that context (`context_weights`, agent/learn/weights.py)."""
    data = knowledge.of(source).load(knowledge.TACTICS)
    out = from_data(data)
    if family is not None:
        for name, t in for_family(seeds.family(family), data.get("param_weights", {})).items():
            out.setdefault(name, t)
        learned = data.get("context_weights", {}).get(knowledge.context_key(family, mode), {}) if mode else {}
        for name, weight in learned.items():
            if name in out:
                out[name] = dataclasses.replace(out[name], weight=float(weight))
    return out, data["version"]


@dataclasses.dataclass(frozen=True)
class Subject:
    """What a tactic applies to: a kernel, with the genome that made it when there is one."""

    kernel: object  # ir_pb2.Kernel
    genome: object  # genome.Genome or None


def _first_role(kernel, kinds):
    for role in kernel.roles:
        if role.kind in kinds:
            return role
    raise NotApplicable("no role of kind %s" % "/".join(ir_pb2.RoleKind.Name(k) for k in kinds))


def _swizzled(kernel, in_ring):
    ring = {name for p in kernel.pipelines for name in p.regions}
    for region in kernel.regions:
        if (region.space == ir_pb2.MEMORY_SPACE_SHARED and region.swizzle != ir_pb2.SWIZZLE_NONE_UNSPECIFIED
                and (region.name in ring) == in_ring):
            return region.name
    raise NotApplicable("no swizzled %s region" % ("ring" if in_ring else "resident"))


def _main_mma_loop(kernel):
    consumer = _first_role(kernel, (ir_pb2.ROLE_KIND_CONSUMER, ir_pb2.ROLE_KIND_COMPUTE))
    for _, _, op in walk_ops(consumer.body):
        if op.WhichOneof("kind") == "loop" and op.loop.kind == ir_pb2.LOOP_KIND_SERIAL_UNSPECIFIED and any(
                inner.WhichOneof("kind") == "mma" for _, _, inner in walk_ops(op.loop.body)):
            return op.loop
    raise NotApplicable("no loop around an MMA")


def _divided(expr):
    """Symbols an expression divides by a constant, in order: the axes a grid or a tile loop walks in blocks."""
    out = []
    for e in exprs_under(expr):
        b = e.binary if e.WhichOneof("kind") == "binary" else None
        if b is not None and b.op in (ir_pb2.BINARY_OP_DIV, ir_pb2.BINARY_OP_CEIL_DIV) and \
                b.lhs.WhichOneof("kind") == "sym" and b.rhs.WhichOneof("kind") == "int" and b.lhs.sym not in out:
            out.append(b.lhs.sym)
    return out


def _grid_axis(i):
    def select(kernel):
        if kernel.launch.persistent:
            loops = [op.loop for r in kernel.roles for _, _, op in walk_ops(r.body)
                     if op.WhichOneof("kind") == "loop" and op.loop.kind == ir_pb2.LOOP_KIND_PERSISTENT]
            walked = _divided(loops[0].end) if loops else []
        else:
            walked = [s for g in kernel.launch.grid for s in _divided(g)[:1]]
        if len(walked) <= i:
            raise NotApplicable("the launch walks %d axes in blocks" % len(walked))
        return walked[i]
    return select


def _loop_axis(kernel):
    walked = _divided(_main_mma_loop(kernel).end)
    if not walked:
        raise NotApplicable("the MMA loop's bound divides no symbol")
    return walked[-1]


def _stream_ring(kernel):
    loop = _main_mma_loop(kernel)
    waited = {op.mbarrier_wait.barrier.barrier for _, _, op in walk_ops(loop.body)
              if op.WhichOneof("kind") == "mbarrier_wait"}
    for p in kernel.pipelines:
        if p.full in waited:
            return p.name
    raise NotApplicable("no ring feeds the MMA loop")


def _resident_ring(kernel):
    stream = _stream_ring(kernel)
    for p in kernel.pipelines:
        if p.name != stream:
            return p.name
    raise NotApplicable("no ring besides the streamed one")


_SELECTORS = {
    "@producer": lambda k: _first_role(k, (ir_pb2.ROLE_KIND_PRODUCER,)).name,
    "@consumer": lambda k: _first_role(k, (ir_pb2.ROLE_KIND_CONSUMER, ir_pb2.ROLE_KIND_COMPUTE)).name,
    "@ring": lambda k: _swizzled(k, True),
    "@resident": lambda k: _swizzled(k, False),
    "@main": lambda k: _main_mma_loop(k).var,
    "@grid0": _grid_axis(0),
    "@grid1": _grid_axis(1),
    "@loop_axis": _loop_axis,
    "@stream_ring": _stream_ring,
    "@resident_ring": _resident_ring,
}
_TARGET_ARGS = ("role", "region", "var", "pipeline", "symbol")


def resolve_args(tactic, kernel):
    """(genome key, concrete args) of a rewrite tactic on `kernel`."""
    args = {k: (_SELECTORS[v](kernel) if isinstance(v, str) and v in _SELECTORS else v) for k, v in tactic.args.items()}
    if "delta" in args:
        role = next((r for r in kernel.roles if r.name == args.get("role")), None)
        if role is None or not role.registers:
            raise NotApplicable("role %r has no register budget to move" % args.get("role"))
        args["value"] = role.registers + args.pop("delta")
    if "scale" in args:
        size = axes.extent(kernel, args["symbol"]) * args.pop("scale")
        if size != int(size):
            raise NotApplicable("%s's block does not scale to a whole size" % args["symbol"])
        args["size"] = int(size)
    if "stages_delta" in args:
        ring = next((p for p in kernel.pipelines if p.name == args.get("pipeline")), None)
        if ring is None:
            raise NotApplicable("no ring %r" % args.get("pipeline"))
        args["stages"] = ring.stages + args.pop("stages_delta")
    target = next((args[k] for k in _TARGET_ARGS if k in args), None)
    return (tactic.rewrite if target is None else "%s:%s" % (tactic.rewrite, target)), args


def apply(tactic, subject, fixed, rng):
    """The child Subject of `tactic` on `subject`; NotApplicable when the move does not exist."""
    g = subject.genome
    if tactic.kind == "param":
        if g is None:
            raise NotApplicable("no genome: the kernel was not built from a seed family")
        params = seeds.family(g.family).step(g.params, tactic.param, tactic.step)
        if params is None:
            raise NotApplicable("%s cannot step %+d from %s" % (tactic.param, tactic.step, g.params))
        child = g.with_params(params)
    elif tactic.kind == "macro":
        for step in tactic.steps:
            subject = apply(step, subject, fixed, rng)
        return subject
    elif tactic.kind == "drop":
        if g is None or not g.rewrites:
            raise NotApplicable("no rewrite to drop")
        child = g.without_rewrite(rng.choice(sorted(g.rewrites)))
    else:
        key, args = resolve_args(tactic, subject.kernel)
        if g is None:
            return Subject(transforms.apply(subject.kernel, tactic.rewrite, args), None)
        if g.rewrites.get(key) == args:
            raise NotApplicable("the genome has %s already" % key)
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
        except NotApplicable as e:
            hit = e
        except (ValueError, AssertionError, KeyError) as e:
            hit = NotApplicable("the family does not build %s: %s" % (g.describe(), e))
        _MATERIALIZED[key] = hit
        if len(_MATERIALIZED) > CACHE_SIZE:
            _MATERIALIZED.popitem(last=False)
    else:
        _MATERIALIZED.move_to_end(key)
    if isinstance(hit, NotApplicable):
        raise hit
    return hit

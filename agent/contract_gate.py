"""Contract preservation: a candidate keeps its task's kernel contract, or it gets no fitness.

Every candidate (a transformation's, a parameter step's, an LLM's) passes this gate
before the verifier: `breaks(contract, task, kernel)` lists how it breaks the task's
KernelContract (agent/task.py), empty when it keeps it:
- it says it computes the same thing: the IR contract's reference and metric;
- it takes the same arguments: exactly the contract's params, each with its dtype,
  access and rank (the binding launches it by these names);
- it still accepts the task's inputs: every timed and checked shape lies in its symbols'
  ranges and satisfies its constraints (a tile that stopped dividing N is a mismatch);
- each output is still computed the way the contract requires: the ops whose data
  reach the output (a backward slice through registers, shared and tensor memory,
  from every write of it) include every required op kind and read every required
  input. A kernel that writes labels without an arg-min, or stops reading c_sq, is
  cheaper and wrong, and the cost model would reward it: it is rejected here, with
  its reason, before anything predicts it.
`diagnostic(reasons)` is the rejection as a Diagnostic (CAKE-AGENT-001, category
contract) so it is recorded and shown like the compiler's; a message about shapes
the contract does not admit says "violate", which the repair map steps away from.
"""

from cake.compiler.v1 import diagnostics_pb2
from cake.ir.v1 import ir_pb2

from agent.ir_edit import exprs_under, op_message, walk_ops, written_tiles
from compiler.ir import enums
from compiler.ir.expr import UnboundSymbol, evaluate, symbols
from compiler.ir.paths import walk

DIAGNOSTIC_ID = "CAKE-AGENT-001"
_OP_ENUMS = {"arg_reduce": ir_pb2.ArgReduceOp, "reduce": ir_pb2.ReduceOp, "elementwise": ir_pb2.ElementwiseOp,
             "atomic": ir_pb2.AtomicOp, "mma": ir_pb2.MmaKind}
_GLOBAL_WRITES = {"copy": ("dst_global",), "tma_store": ("dst",), "atomic": ("dst",)}
_GLOBAL_READS = {"copy": ("src_global",), "tma_load": ("src",), "cp_async": ("src",), "atomic": ("dst",)}


def _short(enum_type, value):
    return enums.short_name(enum_type.DESCRIPTOR, value) if value in enum_type.values() else str(value)


def _names(op):
    """The names an op counts as: its kind, and kind:<operation> where it has one (arg_reduce:argmin)."""
    kind = op.WhichOneof("kind")
    msg = op_message(op)
    out = {kind}
    enum_type = _OP_ENUMS.get(kind)
    if enum_type is not None:
        out.add("%s:%s" % (kind, _short(enum_type, msg.op if kind != "mma" else msg.kind)))
    return out


def _io(op, registers):
    """(reads, writes) of one op as ("r", region) / ("p", param) sets. Every tile it names counts as read (a
    written tile may accumulate), and so do register scalars its expressions read; a global it writes does not
    (but an atomic's destination does)."""
    kind = op.WhichOneof("kind")
    msg = op_message(op)
    global_writes = {("p", getattr(msg, f).param) for f in _GLOBAL_WRITES.get(kind, ()) if msg.HasField(f)}
    writes = {("r", t.region) for t in written_tiles(op)} | global_writes
    reads = {("r", n.region) for _, n in walk(msg) if isinstance(n, ir_pb2.TileRef)}
    reads |= {("p", getattr(msg, f).param) for f in _GLOBAL_READS.get(kind, ()) if msg.HasField(f)}
    reads |= {("r", s) for e in exprs_under(msg) for s in symbols(e) if s in registers}
    return reads, writes


def dataflow(kernel, output):
    """(op names, input params) of the backward slice of `output`: every op whose data reach its writes."""
    registers = {r.name for r in kernel.regions if r.space == ir_pb2.MEMORY_SPACE_REGISTER}
    ops = []
    for role in kernel.roles:
        for _, _, op in walk_ops(role.body):
            if op.WhichOneof("kind") not in ("loop", "branch", None):
                ops.append((op, _io(op, registers)))
    needed, taken = {("p", output)}, set()
    changed = True
    while changed:
        changed = False
        for i, (_, (reads, writes)) in enumerate(ops):
            if i not in taken and writes & needed:
                taken.add(i)
                needed |= reads
                changed = True
    names = set()
    for i in taken:
        names |= _names(ops[i][0])
    inputs = {n for kind, n in needed if kind == "p" and n != output}
    return names, inputs


def _admits(kernel, shape):
    """Why the kernel's contract does not admit `shape` (a dict of symbol values), or None."""
    env = dict(shape)
    for s in kernel.contract.symbols:
        v = env.get(s.name)
        if v is None:
            if s.HasField("value"):
                env[s.name] = s.value
            continue  # a symbol the binding derives (a padded length), checked where it is bound
        if not s.min <= v <= s.max or (s.HasField("value") and v != s.value):
            return "%s = %d lies outside its range %d .. %d%s" % (
                s.name, v, s.min, s.max, " (specialized to %d)" % s.value if s.HasField("value") else "")
    for c in kernel.contract.constraints:
        try:
            ok = evaluate(c.expr, env)
        except (UnboundSymbol, ZeroDivisionError):
            continue  # a constraint over symbols the task leaves to the binding (e.g. a padded length)
        if not ok:
            return "%s (%s)" % (c.doc or "a constraint", _fmt(shape))
    return None


def _fmt(shape):
    return ", ".join("%s=%s" % kv for kv in sorted(shape.items()))


def breaks(contract, task, kernel):
    """The ways `kernel` breaks `contract` for `task` (a KernelContract and a Task); empty when it keeps it."""
    out = []
    if kernel.contract.reference != contract.reference:
        out.append("it computes %r, not the task's %r" % (kernel.contract.reference, contract.reference))
    metric = _short(ir_pb2.Metric, kernel.contract.metric)
    if metric != contract.metric:
        out.append("it is judged by %s, not the task's %s" % (metric, contract.metric))
    params = {p.name: p for p in kernel.params}
    missing, extra = sorted(set(contract.params) - set(params)), sorted(set(params) - set(contract.params))
    if missing:
        out.append("it dropped the params %s" % ", ".join(missing))
    if extra:
        out.append("it takes params the task does not pass: %s" % ", ".join(extra))
    for name, spec in sorted(contract.params.items()):
        p = params.get(name)
        if p is None:
            continue
        have = (_short(ir_pb2.Dtype, p.dtype), _short(ir_pb2.Access, p.access), len(p.shape))
        if have != (spec.dtype, spec.access, spec.rank):
            out.append("param %s is %s %s of rank %d, the contract's is %s %s of rank %d" % (
                (name,) + have + (spec.dtype, spec.access, spec.rank)))
    for shape in task.all_shapes:
        why = _admits(kernel, shape)
        if why:
            out.append("the task's shapes violate its contract: %s" % why)
            break
    for output, req in sorted(contract.requires.items()):
        if output not in params:
            continue
        names, inputs = dataflow(kernel, output)
        lost = [op for op in req.ops if op not in names]
        unread = [i for i in req.inputs if i not in inputs]
        if lost:
            out.append("%s no longer comes from %s (the contract requires %s)" % (
                output, " and ".join(lost), ", ".join(req.ops)))
        if unread:
            out.append("%s no longer depends on %s" % (output, ", ".join(unread)))
    return out


def diagnostic(reasons):
    """The gate's rejection as an error Diagnostic."""
    return diagnostics_pb2.Diagnostic(
        severity=diagnostics_pb2.SEVERITY_ERROR, id=DIAGNOSTIC_ID, category=diagnostics_pb2.CATEGORY_CONTRACT,
        message="the candidate breaks the task's kernel contract: " + "; ".join(reasons), path="kernel",
        fix_hint="Keep the task's params, its reference and metric, inputs its shapes satisfy, and every required "
                 "computation on the way to each output (agent/tasks/contracts).")

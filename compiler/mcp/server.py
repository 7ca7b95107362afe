"""The MCP server (official MCP Python SDK): CAKE's compiler steps as tools, its documents as resources.

Tools take CAKE IR text (docs/ir_text.md) and answer with the compiler's diagnostics
(id, message, IR path, line:column, fix hint, notes), exactly what `cake verify`
reports:

- verify(program, target): the verifier's findings; valid when none is an error.
- analyze(program, shapes, device, target): the cost model's prediction (verified first).
- compile(program, target, ptx): CUDA C++, PTX and ptxas' resources (nvcc on this host).
- explain_rule(rule_id): what a rule catches, its fix, and a known-bad program that trips it.
- list_primitives(): every IR op, what it lowers to, on which targets.
- measure(program, task, shapes, target): only on a GPU host started with --measure: the
  runtime's oracle, then its timer, in an isolated worker.

Resources: the IR docs, the text grammar, the protos and the corpus (resources.py).
"""

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from compiler.build import nvcc
from compiler.cli import actions, output
from compiler.mcp import resources
from compiler.version import VERSION

INSTRUCTIONS = """CAKE compiles GPU kernels written in CAKE IR, a hardware-explicit schedule IR (warp roles,
TMA/cp.async movement, mbarriers with phases and transaction counts, stage rings, wgmma/mma.sync/tcgen05).
Write a kernel in the text form (resource cake://docs/ir_text.md; examples under cake://corpus/good/),
call verify until it reports no errors (each diagnostic names a rule id, an IR path, line:column and a fix;
explain_rule gives more), analyze for the predicted cost, compile for CUDA/PTX and register usage, and,
where offered, measure to check it against its task's contract and time it on the GPU."""


def _diagnostics(diags):
    return [output.to_dict(d) for d in diags]


def _text(diags, filename):
    return "\n".join(output.gcc(d, filename) for d in diags)


def _load(program, target):
    """(Program or None, diagnostics): a syntax error is a diagnostic, like any other finding."""
    return actions.parse(program, "program.cake", target)


def verify_tool(program, target=None):
    prog, diags = _load(program, target)
    if prog is not None:
        diags = actions.verify(prog)
    return {"valid": not actions.has_errors(diags), "diagnostics": _diagnostics(diags),
            "text": _text(diags, "program.cake")}


def analyze_tool(program, shapes=None, device=None, target=None):
    prog, diags = _load(program, target)
    report = None
    if prog is not None:
        diags, report = actions.analyze(prog, shapes or {}, device)
    return {"valid": report is not None, "diagnostics": _diagnostics(diags), "text": _text(diags, "program.cake"),
            "report": output.to_dict(report) if report is not None else None}


def compile_tool(program, target=None, ptx=True):
    prog, diags = _load(program, target)
    compiled = None
    if prog is not None:
        diags, compiled = actions.compile(prog)
    out = {"valid": compiled is not None, "diagnostics": _diagnostics(diags), "text": _text(diags, "program.cake")}
    if compiled is not None:
        out.update(target=compiled.target, ir_hash=compiled.ir_hash, cuda_source=compiled.cuda_source,
                   resources=output.to_dict(compiled.resources), launch=output.to_dict(compiled.launch),
                   cubin_bytes=len(compiled.cubin), cache_hit=compiled.cache_hit)
        if ptx:
            out["ptx"] = compiled.ptx
    return out


def explain_rule_tool(rule_id):
    from compiler.corpus import known_bad
    from compiler.verify import RULES

    rule = next((r for r in RULES if r.id == rule_id.strip().upper()), None)
    if rule is None:
        raise ValueError("no rule %r; rules are listed in cake://docs/verifier_rules.md (e.g. %s)"
                         % (rule_id, ", ".join(r.id for r in RULES[:3])))
    examples = [b for b in known_bad.programs() if b.id == rule.id]
    out = {"id": rule.id, "category": rule.category_name, "severity": rule.severity_name, "doc": rule.doc,
           "fix_hint": rule.fix_hint, "examples": []}
    for b in examples[:2]:
        with open(b.path, encoding="utf-8") as f:
            out["examples"].append({"defect": b.defect, "ir_path": b.ir_path, "program": f.read(),
                                    "resource": "cake://corpus/bad/" + b.path.rsplit("/", 1)[-1][:-len(".cake")]})
    return out


def list_primitives_tool():
    from compiler.service import primitives

    return output.to_dict(primitives.list_primitives())


def measure_tool(measurer, program, task, shapes=None, target=None):
    prog, diags = _load(program, target)
    compiled = None
    if prog is not None:
        measurer.task(task)  # an unknown task is the caller's mistake: say so before compiling
        diags, compiled = actions.compile(prog)
    out = {"diagnostics": _diagnostics(diags), "text": _text(diags, "program.cake"), "measured": False}
    if compiled is None:
        return out
    m = measurer.measure(compiled, task, shapes)
    out.update(measured=True, passed=m.passed, failure_kind=m.failure_kind, message=m.message,
               timing={k: v for k, v in (m.timing or {}).items() if k != "times_ms"} or None,
               machine=m.environment, ir_hash=compiled.ir_hash)
    return out


async def _threaded(fn, *args):
    """fn(*args) off the event loop; the caller's mistakes (a bad target, task or rule; no nvcc) as tool errors."""
    try:
        return await anyio.to_thread.run_sync(lambda: fn(*args))
    except (ValueError, nvcc.NvccNotFound) as e:
        raise ToolError(str(e)) from None


def create(measurer=None):
    """The MCPServer; with a runtime.measure.Measurer, also the measure tool."""
    server = MCPServer(name="cake", title="CAKE compiler", version=VERSION, instructions=INSTRUCTIONS)

    @server.tool(description="Verify a CAKE IR program (text form). Returns valid, the diagnostics (id, message, IR "
                             "path, line/column, fix hint, notes) and the same as gcc-style text. target: sm_80, "
                             "sm_90a or sm_100a to retarget it (default: the program's own).")
    async def verify(program: str, target: str | None = None) -> dict:
        return await _threaded(verify_tool, program, target)

    @server.tool(description="Predict a CAKE IR program's cost (verifying first): time, bottleneck stage, FLOPs and "
                             "bytes per level, occupancy. shapes: values of shape symbols (default representative); "
                             "device: e.g. H200 or sm_90a/H200 (default: the target's).")
    async def analyze(program: str, shapes: dict[str, int] | None = None, device: str | None = None,
                      target: str | None = None) -> dict:
        return await _threaded(analyze_tool, program, shapes, device, target)

    @server.tool(description="Verify, lower and compile a CAKE IR program with nvcc: the CUDA C++ it lowers to, the "
                             "PTX (ptx=false leaves it out), ptxas' resource report (registers, spills, shared "
                             "memory), the launch metadata and any build diagnostics located at IR paths.")
    async def compile(program: str, target: str | None = None, ptx: bool = True) -> dict:  # noqa: A001
        return await _threaded(compile_tool, program, target, ptx)

    @server.tool(description="Explain a verifier rule by id (e.g. CAKE-SYNC-004): what it catches, its severity, "
                             "the generic fix, and known-bad example programs that trip it.")
    async def explain_rule(rule_id: str) -> dict:
        return await _threaded(explain_rule_tool, rule_id)

    @server.tool(description="Every op of CAKE IR: its text keyword, what it does and the PTX it lowers to, the "
                             "instruction family it needs and the targets it is supported on.")
    async def list_primitives() -> dict:
        return await _threaded(list_primitives_tool)

    if measurer is not None:
        tasks = "; ".join("%s: %s" % (name, t.doc) for name, t in sorted(measurer.tasks.items()))

        @server.tool(description="Measure a CAKE IR program on this host's GPU: compile it, check it with the "
                                 "runtime's oracle (fresh inputs from several distributions, every shape, poisoned "
                                 "outputs) and time it (cold L2, CUDA events, median) in an isolated worker. Returns "
                                 "passed or the failure's kind and message, the timing and the machine record. "
                                 "task: one of " + tasks + ". shapes: list of shape dicts (default: the task's).")
        async def measure(program: str, task: str, shapes: list[dict[str, int]] | None = None,
                          target: str | None = None) -> dict:
            return await _threaded(measure_tool, measurer, program, task, shapes, target)

    for doc in resources.documents():
        server.resource(doc.uri, name=doc.name, description=doc.description, mime_type=doc.mime_type)(
            _reader(doc))
    return server


def _reader(doc):
    def read() -> str:
        return doc.read()

    return read

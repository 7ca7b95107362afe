"""Build findings as diagnostics at IR paths.

- A LoweringError carries the path of the node lowering could not handle.
- nvcc errors name a line of the generated source; the nearest `// kernel....` comment
  above that line (emit.py writes one before every op) is the IR path.
- ptxas spills are attributed to the role whose register fragments exceed its budget.
"""

import re

from cake.compiler.v1 import diagnostics_pb2 as dpb
from cake.ir.v1 import ir_pb2

from compiler.targets import registers

_NVCC_LINE = re.compile(r"kernel\.cu\((\d+)\): (error|warning)[^:]*: (.*)")
_PATH_COMMENT = re.compile(r"^\s*// (kernel\.[\w\[\].]+)")

def _diag(id_, message, path, fix, severity=dpb.SEVERITY_ERROR):
    return dpb.Diagnostic(
        severity=severity, id=id_, category=dpb.CATEGORY_BUILD, message=message, path=path, fix_hint=fix
    )


def lowering_error(e):
    return _diag("CAKE-BUILD-001", e.message, e.path, e.fix_hint or "rewrite the op in a form lowering supports")


_INSUFFICIENT = re.compile(r"Insufficient registers \((\d+)\).*register target of (\d+)")


def nvcc_errors(source, stderr, kernel=None, ctx=None):
    m = _INSUFFICIENT.search(stderr)
    if m and kernel is not None:
        return [_register_pressure(kernel, ctx, int(m.group(1)), "ptxas needs at least %s registers per thread "
                                   "for one instruction but the launch bounds allow %s" % (m.group(2), m.group(1)))]
    lines = source.splitlines()
    out = []
    for m in _NVCC_LINE.finditer(stderr):
        if m.group(2) != "error":
            continue
        lineno = int(m.group(1))
        path = "kernel"
        for text in reversed(lines[: lineno - 1]):
            pm = _PATH_COMMENT.match(text)
            if pm:
                path = pm.group(1)
                break
        out.append(_diag("CAKE-BUILD-002", "nvcc: %s" % m.group(3).strip(), path,
                         "the generated code for this op does not compile; check the op's operands and types"))
    if not out:
        tail = stderr.strip().splitlines()[-3:]
        out.append(_diag("CAKE-BUILD-002", "nvcc failed: %s" % " | ".join(tail), "kernel",
                         "see the generated CUDA source for the failing construct"))
    return out


def _register_pressure(kernel, ctx, cap, what):
    """A CAKE-BUILD-003 at the role whose fragments most exceed its register budget."""
    ranked = []
    for i, role in enumerate(kernel.roles):
        budget = role.registers or cap
        need = registers.role_need(kernel, i, ctx.target.name)[0]
        ranked.append((need - budget, i, role, need, budget))
    ranked.sort(key=lambda t: (-t[0], t[1]))
    _, i, role, need, budget = ranked[0]
    return _diag(
        "CAKE-BUILD-003",
        "%s; role %r needs about %d registers per thread for its fragments but its budget is %d" % (what, role.name, need, budget),
        "kernel.roles[%d]" % i,
        "raise role %r's register budget (setmaxnreg, taking registers from a producer role; fewer blocks per SM), "
        "or shrink its register fragments (a narrower accumulator tile)" % role.name,
    )


def resource_diagnostics(kernel, ctx, usage):
    out = []
    spilled = usage.spill_store_bytes + usage.spill_load_bytes
    if spilled:
        out.append(_register_pressure(kernel, ctx, ctx.entry_registers, "ptxas spilled %d bytes (%d stores, "
                   "%d loads) with %d registers per thread" % (spilled, usage.spill_store_bytes, usage.spill_load_bytes, usage.registers)))
    return out

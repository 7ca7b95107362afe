"""Diagnostics for people: deterministic order, locations from the source map, one-line text.

    error[CAKE-SYNC-004] kernel.roles[1].body[2].loop.body[0].mbarrier_wait (gemm.cake:23:7): ...
      note: barrier `full` is declared here at kernel.barriers[0] (gemm.cake:9:3)
      fix: ...
"""

import functools

from cake.compiler.v1 import diagnostics_pb2
from cake.ir.v1 import ir_pb2

from compiler.ir import paths

_SEVERITY = {
    diagnostics_pb2.SEVERITY_ERROR: "error",
    diagnostics_pb2.SEVERITY_WARNING: "warning",
    diagnostics_pb2.SEVERITY_NOTE: "note",
}


def locate(location, source_map, path):
    """Fill a Location from the source map (nearest located ancestor); leave it unset without one."""
    if source_map is None:
        return
    found = source_map.lookup(path)
    if found:
        location.line, location.column = found


@functools.lru_cache(maxsize=4096)
def path_key(path):
    """Sort key putting paths in the kernel's tree order (field declaration order, then index)."""
    try:
        steps = paths.split(path)
    except ValueError:
        return ((1 << 30,),)
    desc, key = ir_pb2.Kernel.DESCRIPTOR, []
    for name, index in steps:
        field = desc.fields_by_name.get(name) if desc is not None else None
        if field is None:
            key.append((1 << 30, name, -1 if index is None else index))
            desc = None
            continue
        key.append((field.number, "", -1 if index is None else index))
        desc = field.message_type
    return tuple(key)


def sort_key(d):
    return (path_key(d.path), d.id, d.message)


def _where(location, filename):
    if not location.line:
        return ""
    if filename:
        return " (%s:%d:%d)" % (filename, location.line, location.column)
    return " (%d:%d)" % (location.line, location.column)


def format_diagnostic(d, filename=None):
    """The diagnostic as text: `severity[id] path (file:line:col): message`, then notes and the fix."""
    severity = _SEVERITY.get(d.severity, "diagnostic")
    lines = ["%s[%s] %s%s: %s" % (severity, d.id, d.path, _where(d.location, filename), d.message)]
    for note in d.notes:
        lines.append("  note: %s at %s%s" % (note.message, note.path, _where(note.location, filename)))
    if d.fix_hint:
        lines.append("  fix: %s" % d.fix_hint)
    return "\n".join(lines)

"""Diagnostics as editors and tools read them: gcc-style lines, JSON, and SARIF 2.1.0.

    gemm.cake:23:7: error[CAKE-SYNC-004]: the producer waits forever for round 4's slot
      at kernel.roles[0].body[2].branch.then_body[0].loop.body[0].mbarrier_wait
    gemm.cake:9:3: note: barrier `empty` is declared here
      fix: make every consumer arrive on `empty` after its last read of the slot

A diagnostic's location is its node's line:column in the text (the kernel's first
line when a finding has no nearer located node).
"""

from google.protobuf import json_format

from cake.compiler.v1 import diagnostics_pb2

from compiler.version import VERSION

SEVERITY = {
    diagnostics_pb2.SEVERITY_ERROR: "error",
    diagnostics_pb2.SEVERITY_WARNING: "warning",
    diagnostics_pb2.SEVERITY_NOTE: "note",
}
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


def _where(filename, location):
    line, column = (location.line, location.column) if location.line else (1, 1)
    return "%s:%d:%d" % (filename, line, column)


def gcc(d, filename):
    """One diagnostic as gcc-style lines (file:line:col: severity[ID]: message, the IR path, notes, the fix)."""
    lines = ["%s: %s[%s]: %s" % (_where(filename, d.location), SEVERITY.get(d.severity, "error"), d.id, d.message)]
    if d.path:
        lines.append("  at %s" % d.path)
    for note in d.notes:
        lines.append("%s: note: %s (%s)" % (_where(filename, note.location), note.message, note.path))
    if d.fix_hint:
        lines.append("  fix: %s" % d.fix_hint)
    return "\n".join(lines)


def to_dict(message):
    """A protobuf message as JSON-able data, with the .proto's field names."""
    return json_format.MessageToDict(message, preserving_proto_field_name=True)


def sarif(results, rules):
    """A SARIF 2.1.0 log of (filename, diagnostics) pairs; `rules` maps id -> (doc, fix_hint)."""
    used = sorted({d.id for _, diags in results for d in diags})
    driver = {
        "name": "cake",
        "version": VERSION,
        "rules": [{
            "id": rid,
            "shortDescription": {"text": rules.get(rid, ("", ""))[0] or rid},
            "help": {"text": rules.get(rid, ("", ""))[1] or "See docs/verifier_rules.md."},
        } for rid in used],
    }
    out = []
    for filename, diags in results:
        for d in diags:
            line, column = (d.location.line, d.location.column) if d.location.line else (1, 1)
            result = {
                "ruleId": d.id,
                "ruleIndex": used.index(d.id),
                "level": SEVERITY.get(d.severity, "error"),
                "message": {"text": d.message + (" Fix: " + d.fix_hint if d.fix_hint else "")},
                "locations": [{
                    "physicalLocation": {"artifactLocation": {"uri": filename},
                                         "region": {"startLine": line, "startColumn": column}},
                    "logicalLocations": [{"fullyQualifiedName": d.path, "kind": "element"}],
                }],
            }
            if d.notes:
                result["relatedLocations"] = [{
                    "id": i,
                    "message": {"text": n.message},
                    "physicalLocation": {"artifactLocation": {"uri": filename},
                                         "region": {"startLine": n.location.line or 1,
                                                    "startColumn": n.location.column or 1}},
                } for i, n in enumerate(d.notes)]
            out.append(result)
    return {"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [{"tool": {"driver": driver}, "results": out}]}

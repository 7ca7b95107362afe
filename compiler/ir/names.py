"""Names in CAKE IR: which string fields hold names, and what a name may be.

Every string field of a Kernel declares or refers to something (a kernel, param,
region, barrier, pipeline, role, symbol or loop variable) except the free-text
fields in FREE_TEXT (a contract's math and reference, docs). A name is a C
identifier; an expression's symbol may also be dotted (`block.x`). Lowering prints
names into CUDA source, so it refuses any other string there (`invalid_names`),
verified or not; the verifier's CAKE-STRUCT-001 reports the declarations' names.
"""

import functools
import re

from google.protobuf.descriptor import FieldDescriptor

from compiler.ir import paths

IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
DOTTED_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*\Z")

# Prose: never printed into generated code.
FREE_TEXT = frozenset({
    "cake.ir.v1.Contract.math",
    "cake.ir.v1.Contract.reference",
    "cake.ir.v1.Constraint.doc",
    "cake.ir.v1.Param.doc",
    "cake.ir.v1.Symbol.doc",
})
# Names that may be dotted.
DOTTED = frozenset({"cake.ir.v1.Expr.sym"})

# Characters of a name quoted in an error message; the rest is elided.
QUOTED_CHARS = 40


def is_identifier(text):
    return IDENTIFIER.match(text) is not None


@functools.lru_cache(maxsize=None)
def _name_fields(descriptor):
    """(field name, repeated, pattern) of the message's string fields that hold names."""
    out = []
    for f in descriptor.fields:
        if f.type == FieldDescriptor.TYPE_STRING and f.full_name not in FREE_TEXT:
            pattern = DOTTED_IDENTIFIER if f.full_name in DOTTED else IDENTIFIER
            out.append((f.name, f.is_repeated, pattern))
    return tuple(out)


def invalid_names(kernel):
    """(path, field, value) of every set name field of `kernel` that is not a valid name.

    `path` is the IR path of the message holding the field, `field` the field's name
    (with `[i]` for an element of a repeated field)."""
    for path, node in paths.walk(kernel):
        for name, repeated, pattern in _name_fields(node.DESCRIPTOR):
            values = enumerate(getattr(node, name)) if repeated else [(None, getattr(node, name))]
            for i, value in values:
                if value and not pattern.match(value):
                    yield path, name if i is None else "%s[%d]" % (name, i), value


def quoted(text):
    """`text` as an error message quotes it: repr, cut to QUOTED_CHARS characters."""
    return repr(text) if len(text) <= QUOTED_CHARS else repr(text[:QUOTED_CHARS]) + "... (%d characters)" % len(text)

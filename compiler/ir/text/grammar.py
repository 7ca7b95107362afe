"""The text form's grammar, message by message, written out for a reader who has not seen it (an LLM author).

Derived from schema.py (itself derived from the descriptors), so it names every field
the parser accepts and nothing else: for each block, its fields in printing order with
how each is written (`name: value`, `name { ... }`, `keyword NAME { ... }` per entry,
op items), the short names an enum field takes, and the compact value forms (expressions,
tile and barrier references, operands: compact.py's own description of them). `grammar()` is
the whole text, from Kernel down.
"""

import functools

from cake.ir.v1 import ir_pb2
from google.protobuf.descriptor import FieldDescriptor

from compiler.ir import enums
from compiler.ir.descriptors import real_oneof
from compiler.ir.text import schema
from compiler.ir.text.compact import HEADER_FORMS, VALUE_FORMS

NAMED_HEADER = "NAME"



def _compact_forms():
    """The compact value and header forms as compact.py's docstring spells them (its own description, so the two
    cannot drift): the lines from `Value forms` to the paragraph after the header forms."""
    from compiler.ir.text import compact

    doc = compact.__doc__.splitlines()
    first = next(i for i, line in enumerate(doc) if line.startswith("Value forms"))
    last = next(i for i in range(first, len(doc)) if not doc[i].strip() and i > first)
    return [line.rstrip() for line in doc[first:last]]


def _scalar(field):
    if field.type == FieldDescriptor.TYPE_ENUM:
        return "|".join(enums.short_names(field.enum_type))
    if field.type == FieldDescriptor.TYPE_STRING:
        return "NAME or \"string\""
    if field.type == FieldDescriptor.TYPE_BOOL:
        return "true|false"
    if field.type in (FieldDescriptor.TYPE_FLOAT, FieldDescriptor.TYPE_DOUBLE):
        return "number"
    return "integer"


def _field_line(f):
    message = f.field.message_type
    if f.kind == schema.SCALAR:
        return "%s: %s" % (f.name, _scalar(f.field))
    if f.kind == schema.SCALARS:
        return "%s: [%s, ...]" % (f.name, _scalar(f.field))
    if f.kind == schema.VALUE:
        return "%s: <%s>" % (f.name, message.name)
    if f.kind == schema.VALUES:
        return "%s: [<%s>, ...]" % (f.name, message.name)
    if f.kind == schema.BLOCK:
        return "%s { %s }" % (f.name, message.name)
    if f.kind == schema.ENTRIES:
        return "%s%s { %s } (repeated)" % (f.keyword, " " + NAMED_HEADER if f.named else "", message.name)
    return "%s { ops }" % f.name


def _blocks(descriptor):
    """The message types written as blocks, reachable from `descriptor`, in the order first met."""
    seen, order = set(), []

    def visit(d):
        if d.full_name in seen or d.full_name in VALUE_FORMS or d.full_name == schema.OP.full_name:
            return
        seen.add(d.full_name)
        order.append(d)
        for f in schema.syntax(d).fields:
            if f.field.message_type is not None:
                visit(f.field.message_type)

    visit(descriptor)
    for f in schema.OP.fields:
        if f.message_type is not None:
            visit(f.message_type)
    return order


@functools.lru_cache(maxsize=None)
def grammar():
    """The text form's grammar from Kernel down, one block per message type."""
    lines = ["CAKE IR text: `kernel NAME { ... }`. A block lists `field: value` items and nested blocks, separated "
             "by spaces or newlines; `//` starts a comment. An op list holds op items `<op keyword> { fields }`; "
             "the kernel and a repeated entry whose type has a name are written `keyword NAME { ... }`, and their "
             "blocks omit the name."]
    lines += _compact_forms()
    lines.append("Op keywords: %s" % ", ".join(sorted(schema.OP_KEYWORDS)))
    lines.append("Blocks (fields in printing order; <T> is a compact value of type T; an op's block under its "
                 "keyword):")
    keywords = {f.message_type.full_name: f.name for f in schema.OP.fields if f.message_type and real_oneof(f)}
    for d in _blocks(ir_pb2.Kernel.DESCRIPTOR):
        s = schema.syntax(d)
        fields = [f for f in s.fields if f is not s.ops and not (schema.has_name(d) and f.name == "name")]
        if d.full_name in HEADER_FORMS:
            fields = [f for f in fields if f.name not in HEADER_FORMS[d.full_name].fields]
        body = "; ".join(_field_line(f) for f in fields)
        if s.ops is not None:
            body += ("; " if body else "") + "then its ops"
        lines.append("  %s { %s }" % (keywords.get(d.full_name, d.name), body))
    return "\n".join(lines) + "\n"

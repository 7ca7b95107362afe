"""Printing a CAKE IR kernel as text: canonical, deterministic, and read back exactly by parse.py.

The text is a function of the proto alone. Fields print in declaration order
(a block's direct op list last), fields holding their default are left out
(proto3: only what ListFields reports is printed, so `optional` fields print
when present, even at zero). A block prints on one line when it holds only
`field: value` items and the line fits in WIDTH columns; otherwise one item
per line, indented by two spaces. Compact forms come from compact.py; where
one cannot express a value, its generic `{ ... }` block is printed on one line.
"""

from google.protobuf.descriptor import FieldDescriptor

from compiler.ir import enums, paths
from compiler.ir.text.compact import OP, VALUE_FORMS
from compiler.ir.text.literals import format_float, is_symbol, quote, quote_bytes
from compiler.ir.text.schema import (
    BLOCK,
    ENTRIES,
    OPS,
    SCALAR,
    SCALARS,
    VALUE,
    VALUES,
    OP_KEYWORDS,
    syntax,
)

WIDTH = 100
INDENT = "  "


def print_kernel(kernel):
    """The canonical text of an ir_pb2.Kernel."""
    printer = _Printer()
    lines = []
    head = "%s %s " % (paths.ROOT, name_token(kernel.name))
    printer.layout(head, printer.items(kernel, ("name",)), "", lines)
    return "\n".join(lines) + "\n"


def print_node(node):
    """One node as text, e.g. for a diagnostic: a compact-form value as that value
    (`sA@(kt % 4)`, `N % 64 == 0`), an Op as its item (`tma_load { ... }`), any other
    message as its block (`{ ... }`)."""
    printer = _Printer()
    full_name = node.DESCRIPTOR.full_name
    if full_name in VALUE_FORMS:
        return printer.value(node)
    head, items = printer.op_item(node) if full_name == OP.full_name else ("", printer.items(node))
    lines = []
    printer.layout(head, items, "", lines)
    return "\n".join(lines)


def name_token(name):
    """How a name prints after its keyword (`param A`): bare when an identifier, else quoted."""
    return name if is_symbol(name) else quote(name)


class _Printer:
    """Builds items, (text, children): a leaf `field: value` has children None, a
    block item's text is its head (`param A `) and its children are its items."""

    def items(self, message, skip=()):
        present = {field.name: value for field, value in message.ListFields()}
        if not present:
            return []
        syn = syntax(message.DESCRIPTOR)
        out = []
        for fs in syn.fields:
            value = present.get(fs.name)
            if value is None or fs.name in skip:
                continue
            kind = fs.kind
            if kind == SCALAR:
                out.append(("%s: %s" % (fs.name, _scalar(fs.field, value)), None))
            elif kind == SCALARS:
                texts = ", ".join(_scalar(fs.field, v) for v in value)
                out.append(("%s: [%s]" % (fs.name, texts), None))
            elif kind == VALUE:
                out.append(("%s: %s" % (fs.name, self.value(value)), None))
            elif kind == VALUES:
                out.append(("%s: [%s]" % (fs.name, ", ".join(self.value(v) for v in value)), None))
            elif kind == BLOCK:
                out.append(self.block_item(fs.keyword, value, fs.header))
            elif kind == ENTRIES:
                for entry in value:
                    if fs.named:
                        head = "%s %s" % (fs.keyword, name_token(entry.name))
                        out.append(self.block_item(head, entry, fs.header, ("name",)))
                    else:
                        out.append(self.block_item(fs.keyword, entry, fs.header))
            elif kind == OPS:
                ops = [self.op_item(op) for op in value]
                if fs is syn.ops:
                    out.extend(ops)
                else:
                    out.append((fs.keyword + " ", ops))
        return out

    def block_item(self, head, message, header, skip=()):
        if header is not None:
            text = header.text(message, self)
            if text is not None:
                head = "%s %s" % (head, text)
                skip = skip + tuple(header.fields)
        return head + " ", self.items(message, skip)

    def op_item(self, op):
        # `member { ... }` when the op is exactly one oneof member; else the generic `{ ... }`.
        set_fields = op.ListFields()
        if len(set_fields) == 1:
            field, member = set_fields[0]
            if field.name in OP_KEYWORDS:
                fs = syntax(op.DESCRIPTOR).by_keyword[field.name]
                return self.block_item(field.name, member, fs.header)
        return "", self.items(op)

    def layout(self, head, items, indent, lines):
        """Append the lines of a block item (`head` then its items) at `indent`."""
        if not items:
            lines.append(indent + head + "{}")
            return
        if all(children is None for _, children in items):
            line = "%s%s{ %s }" % (indent, head, "  ".join(text for text, _ in items))
            if len(line) <= WIDTH:
                lines.append(line)
                return
        lines.append(indent + head + "{")
        inner = indent + INDENT
        for text, children in items:
            if children is None:
                lines.append(inner + text)
            else:
                self.layout(text, children, inner, lines)
        lines.append(indent + "}")

    def inline_items(self, head, items):
        if not items:
            return head + "{}"
        parts = (t if c is None else self.inline_items(t, c) for t, c in items)
        return "%s{ %s }" % (head, "  ".join(parts))

    # The interface compact forms print their parts through.

    def inline(self, message):
        """The generic block of `message` on one line: `{ binary { op: add  lhs: a } }`."""
        return self.inline_items("", self.items(message))

    def compact(self, message):
        """The compact form of a value-form message, or None when it has none."""
        form = VALUE_FORMS[message.DESCRIPTOR.full_name]
        if all(field.name in form.fields for field, _ in message.ListFields()):
            return form.text(message, self)
        return None

    def value(self, message):
        """A value-form message as it prints in a value position: compact, else its inline block."""
        text = self.compact(message)
        return self.inline(message) if text is None else text


def _scalar(field, value):
    kind = field.type
    if kind == FieldDescriptor.TYPE_BOOL:
        return "true" if value else "false"
    if kind == FieldDescriptor.TYPE_STRING:
        return quote(value)
    if kind == FieldDescriptor.TYPE_BYTES:
        return quote_bytes(value)
    if kind in (FieldDescriptor.TYPE_DOUBLE, FieldDescriptor.TYPE_FLOAT):
        return format_float(value)
    if kind == FieldDescriptor.TYPE_ENUM and value in field.enum_type.values_by_number:
        return enums.short_name(field.enum_type, value)
    return str(value)

"""How each field of each IR message is written in the text form, derived from the descriptors.

A field's kind decides its syntax:
    SCALAR   `name: 42`               SCALARS  `name: [1, 2]`
    VALUE    `name: sA@s` (a compact form type, see compact.py)
    VALUES   `name: [M, K]`
    BLOCK    `name { ... }` (a singular message)
    ENTRIES  `keyword { ... }` per element of a repeated message, `keyword NAME { ... }`
             when the element type has a string `name` (`param A { ... }`)
    OPS      a repeated Op: one `member { ... }` item per op. When a message has one op list
             and no field named like an op, its ops stand directly in its block, after
             its other fields (Role, Loop); otherwise the list is wrapped: `name { ... }`.
Nothing here names an IR message or field: new fields and ops need no change.
"""

import functools

from compiler.ir.descriptors import real_oneof
from compiler.ir.text.compact import HEADER_FORMS, OP, VALUE_FORMS

SCALAR, SCALARS, VALUE, VALUES, BLOCK, ENTRIES, OPS = (
    "scalar", "scalars", "value", "values", "block", "entries", "ops"
)

# An op item is `member { ... }`: the member names of Op's oneofs are the op keywords.
OP_KEYWORDS = frozenset(f.name for f in OP.fields if f.message_type and real_oneof(f))


class FieldSyntax:
    """One field: its kind, the word that starts its items, and its oneof (None if none)."""

    __slots__ = ("field", "name", "kind", "keyword", "named", "oneof", "header")

    def __init__(self, field, kind, keyword, named, oneof):
        self.field = field
        self.name = field.name
        self.kind = kind
        self.keyword = keyword
        self.named = named
        self.oneof = oneof
        # The header form of this field's message type, if it has one (Loop).
        message = field.message_type
        self.header = HEADER_FORMS.get(message.full_name) if message is not None else None


class MessageSyntax:
    """A message type's fields in printing order, how items are looked up, and its op list."""

    def __init__(self, descriptor):
        self.name = descriptor.name
        kinds = {f.name: _kind(f) for f in descriptor.fields}
        op_lists = [name for name, kind in kinds.items() if kind == OPS]
        direct = op_lists[0] if len(op_lists) == 1 and not OP_KEYWORDS & set(kinds) else None
        taken = set(kinds) | (OP_KEYWORDS if direct else set())
        fields = []
        for field in descriptor.fields:
            kind = kinds[field.name]
            keyword = field.name
            if kind == ENTRIES:
                keyword = _singular(field.name)
                if keyword in taken:
                    keyword = field.name
                taken.add(keyword)
            named = kind == ENTRIES and has_name(field.message_type)
            oneof = real_oneof(field)
            fields.append(FieldSyntax(field, kind, keyword, named, oneof and oneof.name))
        others = [f for f in fields if f.name != direct]
        # The direct op list prints last, so a body reads after the settings it runs under.
        self.ops = next((f for f in fields if f.name == direct), None)
        self.fields = others + ([self.ops] if self.ops else [])
        self.by_keyword = {f.keyword: f for f in others}
        # The op keywords that may start an item of this block (none without a direct op list).
        self.op_keywords = OP_KEYWORDS if direct else frozenset()


@functools.lru_cache(maxsize=None)
def syntax(descriptor):
    """The MessageSyntax of a message type (by descriptor)."""
    return MessageSyntax(descriptor)


def _kind(field):
    message = field.message_type
    if message is None:
        return SCALARS if field.is_repeated else SCALAR
    if message.full_name in VALUE_FORMS:
        return VALUES if field.is_repeated else VALUE
    if not field.is_repeated:
        return BLOCK
    return OPS if message.full_name == OP.full_name else ENTRIES


def _singular(name):
    if name.endswith("ies"):
        return name[:-3] + "y"
    if name.endswith("s") and not name.endswith("ss"):
        return name[:-1]
    return name


def has_name(descriptor):
    """Whether entries of this message type are written `keyword NAME { ... }`: it has a string `name`."""
    field = descriptor.fields_by_name.get("name")
    return field is not None and field.type == field.TYPE_STRING and not field.is_repeated

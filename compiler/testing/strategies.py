"""Hypothesis strategies for arbitrary CAKE IR messages, derived from the protobuf descriptors.

`messages(ir_pb2.Kernel)` draws kernels with every shape the schema allows: unset
vs. set-but-empty submessages and oneof members, proto3 `optional` presence,
and odd scalars (extreme and negative ints, empty or non-ASCII strings with
quotes and newlines, inf / nan with payloads / -0.0 / subnormal floats, enum
numbers the enum does not define). A node budget and a depth limit keep draws
small. Nothing here names an IR field, so the strategies follow the schema;
use them for property tests, fuzzing and mutation testing of anything that
consumes IR.
"""

import hypothesis.strategies as st
from google.protobuf.descriptor import FieldDescriptor as FD

from compiler.ir.descriptors import INT_RANGES, real_oneof

# Strings that exercise the text form's keywords and compact forms; drawn as often as any text.
NAMES = (
    "A", "sA", "full", "kt", "M", "block.x", "cluster.rank", "_t0", "acc",
    "in", "int", "coord", "inf", "nan", "round", "min", "kernel", "true", "loop",
)  # fmt: skip

def messages(message_class, max_depth=8, max_nodes=40, max_list=3):
    """A strategy for `message_class` instances: at most `max_nodes` messages,
    nested at most `max_depth` deep, repeated fields at most `max_list` long."""

    @st.composite
    def draw_message(draw):
        message = message_class()
        _fill(draw, message, _Limits(max_depth, max_nodes, max_list), 0)
        return message

    return draw_message()


def scalars(field):
    """A strategy for values of the scalar or enum field `field` (defaults included)."""
    kind = field.type
    if kind in INT_RANGES:
        low, high, _ = INT_RANGES[kind]
        small = st.integers(max(low, -3), 300)
        return st.one_of(st.just(0), small, st.sampled_from((low, high)), st.integers(low, high))
    if kind == FD.TYPE_ENUM:
        known = [v.number for v in field.enum_type.values]
        return st.one_of(st.sampled_from(known), st.sampled_from(known), st.integers(-2, 1000))
    if kind == FD.TYPE_BOOL:
        return st.booleans()
    if kind == FD.TYPE_STRING:
        return st.one_of(st.sampled_from(NAMES), st.text(max_size=6))
    if kind == FD.TYPE_BYTES:
        return st.binary(max_size=6)
    if kind == FD.TYPE_FLOAT:
        return st.floats(width=32)
    if kind == FD.TYPE_DOUBLE:
        return st.floats()
    raise NotImplementedError("no strategy for field %s of type %d" % (field.full_name, kind))


class _Limits:
    def __init__(self, max_depth, max_nodes, max_list):
        self.max_depth = max_depth
        self.nodes_left = max_nodes
        self.max_list = max_list

    def room(self, depth):
        return depth < self.max_depth and self.nodes_left > 0


def _fill(draw, message, limits, depth):
    limits.nodes_left -= 1
    descriptor = message.DESCRIPTOR
    chosen = {}
    for field in descriptor.fields:
        oneof = real_oneof(field)
        if oneof is not None and oneof.name not in chosen:
            chosen[oneof.name] = draw(st.sampled_from([None] + [f.name for f in oneof.fields]))
    for field in descriptor.fields:
        oneof = real_oneof(field)
        if oneof is not None:
            if chosen[oneof.name] == field.name:
                _set(draw, message, field, limits, depth)
        elif field.is_repeated:
            can_nest = field.message_type is None or limits.room(depth + 1)
            count = draw(st.integers(0, limits.max_list)) if can_nest else 0
            for _ in range(count):
                if field.message_type is None:
                    getattr(message, field.name).append(draw(scalars(field)))
                else:
                    _fill(draw, getattr(message, field.name).add(), limits, depth + 1)
        elif field.message_type is not None:
            if limits.room(depth + 1) and draw(st.booleans()):
                _set(draw, message, field, limits, depth)
        elif not field.has_presence or draw(st.booleans()):
            setattr(message, field.name, draw(scalars(field)))


def _set(draw, message, field, limits, depth):
    # Set the field even to its default: a set oneof member or submessage is not an unset one.
    if field.message_type is None:
        setattr(message, field.name, draw(scalars(field)))
        return
    child = getattr(message, field.name)
    child.SetInParent()
    if limits.room(depth + 1):
        _fill(draw, child, limits, depth + 1)

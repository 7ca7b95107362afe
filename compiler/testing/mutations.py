"""Hypothesis strategies that mutate whole kernels: for property tests of anything that consumes IR.

`mutated(bases)` draws a copy of one of `bases` with one to a few mutations,
each at a random message node of the kernel (compiler.ir.paths.walk):
- set a scalar or enum field (interesting ints, values compiler.testing.strategies
  draws, enum numbers the enum lacks, names taken from the kernel so that
  references move to other declarations);
- delete, duplicate or swap elements of a repeated field (ops, regions,
  barriers, coordinates, ...);
- clear a message field (an unset oneof member, a missing bound).
"""

import hypothesis.strategies as st
from cake.ir.v1 import ir_pb2
from google.protobuf.descriptor import FieldDescriptor as FD

from compiler.ir import paths
from compiler.testing import strategies

INTERESTING = (-1, 0, 1, 2, 3, 4, 7, 8, 16, 31, 32, 64, 100, 127, 128, 255, 256, 1024, 65536, (1 << 31) - 1)
_INT_TYPES = (FD.TYPE_INT32, FD.TYPE_INT64, FD.TYPE_SINT32, FD.TYPE_SINT64, FD.TYPE_UINT32, FD.TYPE_UINT64)


def _names(kernel):
    out = {"kt", "i", "warp", "elected", "block.x"}
    for path, node in paths.walk(kernel):
        for field in ("name", "var", "sym", "region", "barrier", "param"):
            value = getattr(node, field, None) if field in node.DESCRIPTOR.fields_by_name else None
            if isinstance(value, str) and value:
                out.add(value)
    return sorted(out)


def _value(draw, field, kernel):
    if field.type in _INT_TYPES:
        return draw(st.one_of(st.sampled_from(INTERESTING), strategies.scalars(field)))
    if field.type == FD.TYPE_STRING:
        return draw(st.one_of(st.sampled_from(_names(kernel)), strategies.scalars(field)))
    return draw(strategies.scalars(field))


def _set_scalar(draw, kernel, node):
    fields = [f for f in node.DESCRIPTOR.fields if f.message_type is None]
    if not fields:
        return
    field = draw(st.sampled_from(fields))
    value = _value(draw, field, kernel)
    if field.is_repeated:
        items = getattr(node, field.name)
        if items and draw(st.booleans()):
            items[draw(st.integers(0, len(items) - 1))] = value
        else:
            items.append(value)
    else:
        setattr(node, field.name, value)


def _repeated(draw, node):
    fields = [f for f in node.DESCRIPTOR.fields if f.message_type is not None and f.is_repeated and getattr(node, f.name)]
    return getattr(node, draw(st.sampled_from(fields)).name) if fields else None


def _delete(draw, kernel, node):
    items = _repeated(draw, node)
    if items is not None:
        del items[draw(st.integers(0, len(items) - 1))]


def _duplicate(draw, kernel, node):
    items = _repeated(draw, node)
    if items is not None:
        items.add().CopyFrom(items[draw(st.integers(0, len(items) - 1))])


def _swap(draw, kernel, node):
    items = _repeated(draw, node)
    if items is not None and len(items) > 1:
        i, j = draw(st.integers(0, len(items) - 1)), draw(st.integers(0, len(items) - 1))
        held = type(items[i])()
        held.CopyFrom(items[i])
        items[i].CopyFrom(items[j])
        items[j].CopyFrom(held)


def _clear(draw, kernel, node):
    fields = [f.name for f in node.DESCRIPTOR.fields if f.message_type is not None and not f.is_repeated and node.HasField(f.name)]
    if fields:
        node.ClearField(draw(st.sampled_from(fields)))


MUTATIONS = (_set_scalar, _set_scalar, _delete, _duplicate, _swap, _clear)


@st.composite
def mutated(draw, bases, max_mutations=3):
    """A mutated copy of one of `bases` (ir_pb2.Kernel messages)."""
    kernel = ir_pb2.Kernel()
    kernel.CopyFrom(draw(st.sampled_from(bases)))
    for _ in range(draw(st.integers(1, max_mutations))):
        nodes = list(paths.walk(kernel))
        _, node = nodes[draw(st.integers(0, len(nodes) - 1))]
        mutate = draw(st.sampled_from(MUTATIONS))
        try:
            mutate(draw, kernel, node)
        except (ValueError, TypeError):  # a value the field cannot hold (e.g. out of its integer range)
            pass
    return kernel

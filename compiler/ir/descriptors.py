"""Protobuf descriptor facts shared by IR tooling: integer ranges per field type, real oneofs."""

from google.protobuf.descriptor import FieldDescriptor as FD

INT32 = (-(1 << 31), (1 << 31) - 1, "int32")
INT64 = (-(1 << 63), (1 << 63) - 1, "int64")
UINT32 = (0, (1 << 32) - 1, "uint32")
UINT64 = (0, (1 << 64) - 1, "uint64")
# Field type -> (lowest, highest, name) of the values it holds.
INT_RANGES = {
    FD.TYPE_INT32: INT32, FD.TYPE_SINT32: INT32, FD.TYPE_SFIXED32: INT32,
    FD.TYPE_INT64: INT64, FD.TYPE_SINT64: INT64, FD.TYPE_SFIXED64: INT64,
    FD.TYPE_UINT32: UINT32, FD.TYPE_FIXED32: UINT32,
    FD.TYPE_UINT64: UINT64, FD.TYPE_FIXED64: UINT64,
}  # fmt: skip


def real_oneof(field):
    """The oneof `field` belongs to; None when none, or when it is the synthetic oneof
    `_<name>` that holds a proto3 `optional` field alone (presence, not a choice)."""
    oneof = field.containing_oneof
    if oneof is None or (len(oneof.fields) == 1 and oneof.name == "_" + field.name):
        return None
    return oneof

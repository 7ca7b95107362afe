"""ListPrimitives: every op of CAKE IR with ir.proto's comment on it and where lowering supports it.

The comments (what each op does and the PTX it lowers to) are ir.proto's own: the
build writes ir.proto's FileDescriptorSet with source info beside the generated
ir_pb2.py (cake/ir/v1/ir_descriptor_set.binpb: bazel/proto.bzl, or proto/generate.py
outside Bazel), so the service serves exactly the contract's text and needs no
protobuf compiler at run time. Support comes from lowering's tables: an op needs a printer
(lower/ops.PRINTERS) and, for some ops, a target feature (targets/op_features.OP_FEATURES);
an op named after a feature (cp_async, ldmatrix) needs that feature; each Mma
kind needs the feature its short name names (wgmma, mma_sync, tcgen05).
"""

import functools
import os

from google.protobuf import descriptor_pb2

from cake.compiler.v1 import compiler_service_pb2 as service_pb2
from cake.ir.v1 import ir_pb2

from compiler.ir.enums import short_name
from compiler.lower.ops import PRINTERS
from compiler.targets import FEATURES, TARGETS
from compiler.targets.op_features import OP_FEATURES

# Written by the build beside ir_pb2.py (DESCRIPTOR_SET_SUFFIX in bazel/proto.bzl and proto/generate.py).
IR_DESCRIPTOR_SET = os.path.join(os.path.dirname(os.path.abspath(ir_pb2.__file__)), "ir_descriptor_set.binpb")

# SourceCodeInfo path components (descriptor.proto field numbers).
_MESSAGE_TYPE, _ENUM_TYPE, _FIELD, _ENUM_VALUE = 4, 5, 2, 2


def _file_with_comments():
    """ir.proto's FileDescriptorProto with source info, as the build wrote it."""
    try:
        with open(IR_DESCRIPTOR_SET, "rb") as f:
            files = descriptor_pb2.FileDescriptorSet.FromString(f.read()).file
    except OSError as e:
        raise RuntimeError("cannot read ir.proto's comments (%s): the generated protobuf code is incomplete; "
                           "regenerate it (bazel build //proto:cake_py, or python3 proto/generate.py)" % e) from None
    [file_proto] = [f for f in files if f.name == ir_pb2.DESCRIPTOR.name]
    return file_proto


def _comments(file_proto):
    """SourceCodeInfo path (a tuple) -> its leading comment as one paragraph."""
    return {
        tuple(loc.path): " ".join(line.strip() for line in loc.leading_comments.splitlines() if line.strip())
        for loc in file_proto.source_code_info.location
        if loc.leading_comments
    }


def _targets(feature):
    return [t.name for t in TARGETS.values() if not feature or t.has(feature)]


def _mma_variants(file_proto, comments):
    index = [e.name for e in file_proto.enum_type].index("MmaKind")
    out = []
    for i, value in enumerate(file_proto.enum_type[index].value):
        if value.number == 0:
            continue
        feature = short_name(ir_pb2.MmaKind.DESCRIPTOR, value.number)
        out.append(service_pb2.PrimitiveVariant(
            name=value.name,
            doc=comments.get((_ENUM_TYPE, index, _ENUM_VALUE, i), ""),
            feature=feature if feature in FEATURES else "",
            targets=_targets(feature if feature in FEATURES else None),
        ))
    return out


@functools.lru_cache(maxsize=None)
def list_primitives():
    file_proto = _file_with_comments()
    comments = _comments(file_proto)
    messages = [m.name for m in file_proto.message_type]
    op_index = messages.index("Op")
    out = service_pb2.ListPrimitivesResponse()
    for i, field in enumerate(file_proto.message_type[op_index].field):
        kind = field.name
        feature = OP_FEATURES.get(kind) or (kind if kind in FEATURES else "")
        message_name = field.type_name.rsplit(".", 1)[-1]
        p = out.primitives.add(
            name=kind,
            message=field.type_name.lstrip("."),
            doc=comments.get((_MESSAGE_TYPE, op_index, _FIELD, i), ""),
            message_doc=comments.get((_MESSAGE_TYPE, messages.index(message_name)), ""),
            feature=feature,
            targets=_targets(feature) if kind in PRINTERS else [],
        )
        if kind == "mma":
            p.variants.extend(_mma_variants(file_proto, comments))
    return out

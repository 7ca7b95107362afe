"""The lowering passes: a flat, named list of passes over one Context.

    check_names         every name printed into the source is a C identifier (verified or not)
    check_features      every instruction family the kernel uses is on its target (verified or not)
    layout_roles        warp ranges of roles, threads per block
    layout_shared       shared-memory offsets of regions and mbarriers (1024 B-aligned tiles)
    assign_named        hardware ids of named barriers
    collect_params      params and symbols by name; which tensors need raw pointers
    emit                CUDA C++ source (tensor maps and descriptors derived while emitting)
    launch_metadata     symbol, grid, block, shared bytes, argument ABI for the runtime
"""

from cake.ir.v1 import ir_pb2

from compiler.ir.enums import short_name
from compiler.lower import emit, feature_check, layout, metadata, name_check
from compiler.lower.context import Context, LoweringError
from compiler.targets import TARGETS, database

PASSES = [
    ("check_names", name_check.check_names),
    ("check_features", feature_check.check_features),
    ("layout_roles", layout.layout_roles),
    ("layout_shared", layout.layout_shared),
    ("assign_named", layout.assign_named),
    ("collect_params", layout.collect_params),
    ("emit", emit.emit_kernel),
    ("launch_metadata", metadata.launch_metadata),
]


def _target_of(kernel):
    value = ir_pb2.Target.DESCRIPTOR.values_by_number.get(kernel.target)
    name = short_name(ir_pb2.Target.DESCRIPTOR, value.number) if value else None
    if name not in TARGETS:
        raise LoweringError("kernel.target", "target %s is not one lowering knows (sm_80, sm_90a or sm_100a)"
                            % (name or "value %d" % kernel.target))
    return TARGETS[name]


def lower(kernel):
    """Lower a verified kernel; returns the Context holding `.source` and `.launch`."""
    target = _target_of(kernel)
    ctx = Context(kernel=kernel, target=target, limits=database.limits(target.name))
    for _, run in PASSES:
        run(ctx)
    return ctx

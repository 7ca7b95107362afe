"""The lowering passes: a flat, named list of passes over one Context.

    check_names         every name printed into the source is a C identifier (verified or not)
    layout_roles        warp ranges of roles, threads per block
    layout_shared       shared-memory offsets of regions and mbarriers (1024 B-aligned tiles)
    assign_named        hardware ids of named barriers
    collect_params      params and symbols by name; which tensors need raw pointers
    emit                CUDA C++ source (tensor maps and descriptors derived while emitting)
    launch_metadata     symbol, grid, block, shared bytes, argument ABI for the runtime
"""

from cake.ir.v1 import ir_pb2

from compiler.ir.enums import short_name
from compiler.lower import emit, layout, metadata, name_check
from compiler.lower.context import Context, LoweringError
from compiler.targets import TARGETS

PASSES = [
    ("check_names", name_check.check_names),
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
    ctx = Context(kernel=kernel, target=_target_of(kernel))
    for _, run in PASSES:
        run(ctx)
    return ctx

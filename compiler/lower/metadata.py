"""The launch metadata pass: what the runtime needs to launch the kernel, and nothing to re-derive.

The argument ABI matches emit.py's signature: tensor pointers and scalar params in
declaration order, then unspecialized shape symbols (int64), then tensor maps.
"""

from cake.compiler.v1 import artifact_pb2
from cake.ir.v1 import ir_pb2

# Slack for aligning the shared-memory carve-up to 1024 B at run time (see emit.py).
ALIGN_SLACK = 1024


def launch_metadata(ctx):
    k = ctx.kernel
    md = artifact_pb2.LaunchMetadata(
        symbol="cake_" + k.name,
        persistent=k.launch.persistent,
        blocks_per_sm=max(1, k.launch.min_blocks_per_sm),
        block=[ctx.threads, 1, 1],
        cluster=list(k.launch.cluster),
        dynamic_shared_bytes=ctx.shared_bytes + ALIGN_SLACK,
    )
    if not k.launch.persistent:
        md.grid.extend(k.launch.grid)
    for p in k.params:
        kind = artifact_pb2.ARG_KIND_POINTER if p.kind == ir_pb2.PARAM_KIND_TENSOR else artifact_pb2.ARG_KIND_SCALAR
        md.args.add(name=p.name, kind=kind, source=p.name, dtype=p.dtype)
    for s in k.contract.symbols:
        if not s.HasField("value"):
            md.args.add(name=s.name + "_arg", kind=artifact_pb2.ARG_KIND_SYMBOL, source=s.name, dtype=ir_pb2.DTYPE_I64)
    for t in ctx.tensor_maps:
        md.args.add(name=t.arg, kind=artifact_pb2.ARG_KIND_TENSOR_MAP, source=t.param, box=t.box, swizzle=t.swizzle,
                    dtype=ctx.params[t.param].dtype)
    md.symbols.extend(k.contract.symbols)
    md.constraints.extend(k.contract.constraints)
    md.params.extend(k.params)
    ctx.launch = md

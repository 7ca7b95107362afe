"""The launch metadata pass: what the runtime needs to launch the kernel, and nothing to re-derive.

The arguments are the kernel ABI (compiler/ir/abi.py), which emit.py prints the signature
from: tensor pointers and scalar params in declaration order, then unspecialized shape
symbols (int64), then tensor maps.
"""

from cake.compiler.v1 import artifact_pb2

from compiler.ir import abi, smem_layout

_KINDS = {
    abi.POINTER: artifact_pb2.ARG_KIND_POINTER,
    abi.SCALAR: artifact_pb2.ARG_KIND_SCALAR,
    abi.SYMBOL: artifact_pb2.ARG_KIND_SYMBOL,
    abi.TENSOR_MAP: artifact_pb2.ARG_KIND_TENSOR_MAP,
}


def launch_metadata(ctx):
    k = ctx.kernel
    md = artifact_pb2.LaunchMetadata(
        symbol="cake_" + k.name,
        persistent=k.launch.persistent,
        blocks_per_sm=max(1, k.launch.min_blocks_per_sm),
        block=[ctx.threads, 1, 1],
        cluster=list(k.launch.cluster),
        dynamic_shared_bytes=smem_layout.requested(ctx.shared_bytes),
    )
    if not k.launch.persistent:
        md.grid.extend(k.launch.grid)
    for a in abi.arguments(k, ctx.tensor_maps):
        if a.kind == abi.TENSOR_MAP:
            md.args.add(name=a.name, kind=_KINDS[a.kind], source=a.source, box=a.tensor_map.box,
                        swizzle=a.tensor_map.swizzle, dtype=a.dtype)
        else:
            md.args.add(name=a.name, kind=_KINDS[a.kind], source=a.source, dtype=a.dtype)
    md.symbols.extend(k.contract.symbols)
    md.constraints.extend(k.contract.constraints)
    md.params.extend(k.params)
    ctx.launch = md

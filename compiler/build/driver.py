"""Compile a kernel: lower it, run nvcc/ptxas for its target, package a CompiledKernel.

Build failures become diagnostics located at IR paths: lowering errors at the node that
cannot be lowered, nvcc errors at the IR path named by the generated code's comment
above the failing line, and ptxas' resource report at the roles it concerns.
"""

import os
import tempfile

from cake.compiler.v1 import artifact_pb2, diagnostics_pb2

from compiler.build import cache as compile_cache
from compiler.build import diagnostics as build_diagnostics
from compiler.build import nvcc, ptxas_report
from compiler.ir.hashing import ir_hash
from compiler.lower import DEVICE_INCLUDE, LoweringError, lower


class BuildResult:
    """A CompiledKernel (None when the build failed) and the diagnostics of building it."""

    def __init__(self, compiled, diagnostics):
        self.compiled = compiled
        self.diagnostics = diagnostics

    @property
    def ok(self):
        return self.compiled is not None


def toolchain_id():
    return "%s %s" % (nvcc.nvcc_version(), " ".join(nvcc.COMMON_FLAGS))


def build(kernel, cache=None):
    """Lower and compile `kernel` for its own target; cache=None uses the default cache."""
    cache = compile_cache.default_cache() if cache is None else cache
    try:
        ctx = lower(kernel)
    except LoweringError as e:
        return BuildResult(None, [build_diagnostics.lowering_error(e)])
    digest = ir_hash(kernel)
    key = compile_cache.key(digest, ctx.target.name, toolchain_id())
    hit = cache.get(key) if cache else None
    if hit is not None:
        hit.cache_hit = True
        return BuildResult(hit, build_diagnostics.resource_diagnostics(kernel, ctx, hit.resources))
    with tempfile.TemporaryDirectory(prefix="cake-build-") as tmp:
        src = os.path.join(tmp, "kernel.cu")
        with open(src, "w") as f:
            f.write(ctx.source)
        try:
            art = nvcc.compile_cuda(src, ctx.target, tmp, include_dirs=[DEVICE_INCLUDE])
        except nvcc.NvccError as e:
            return BuildResult(None, build_diagnostics.nvcc_errors(ctx.source, e.stderr, kernel, ctx))
    usage = ptxas_report.parse(art.ptxas_report).get(ctx.launch.symbol, artifact_pb2.ResourceUsage())
    compiled = artifact_pb2.CompiledKernel(
        target=ctx.target.name,
        ir_hash=digest,
        cubin=art.cubin,
        ptx=art.ptx,
        cuda_source=ctx.source,
        launch=ctx.launch,
        resources=usage,
        toolchain=toolchain_id(),
    )
    if cache:
        cache.put(key, compiled)
    return BuildResult(compiled, build_diagnostics.resource_diagnostics(kernel, ctx, usage))


def has_errors(diags):
    return any(d.severity == diagnostics_pb2.SEVERITY_ERROR for d in diags)

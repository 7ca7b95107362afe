"""Compile a kernel: lower it, run nvcc/ptxas for its target, package a CompiledKernel.

`build` verifies first: a kernel with verifier errors is never lowered, and the result
carries the verifier's diagnostics (a register over-commit is CAKE-RES-004, not a
lowering error). Build failures become diagnostics located at IR paths: lowering errors
at the node that cannot be lowered, nvcc errors at the IR path named by the generated
code's comment above the failing line, and ptxas' resource report at the roles it concerns.

`build` does it all; the compiler service runs its steps apart (`plan` and `cached` on
the request path, `compile_plan` on its compile pool, `package` after):

    plan(kernel) -> Plan            lower, hash, the cache key (LoweringError when it cannot lower)
    source_only(kernel)             the lowering alone as a CompiledKernel: source and launch, no nvcc
    cached(plan, cache)             the cache's entry as a BuildResult, or None
    compile_plan(plan, work_dir)    nvcc in work_dir -> nvcc.CudaArtifacts (NvccError, NvccTimeout, ...);
                                    compile_source(source, target, work_dir) the same from the source alone
    package(plan, art, cache)       the CompiledKernel and its resource findings; fills the cache
    nvcc_failed(plan, error)        an NvccError as build diagnostics
"""

import dataclasses
import os
import tempfile

from cake.compiler.v1 import artifact_pb2, diagnostics_pb2

from compiler import verify as verifier
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


@dataclasses.dataclass
class Plan:
    """A lowered kernel and its cache key: what nvcc and packaging need."""

    kernel: object  # ir_pb2.Kernel
    ctx: object  # compiler.lower.context.Context
    digest: str  # ir_hash(kernel)
    key: str  # the compile cache's key


def toolchain_id():
    """nvcc's version and the flags every build uses (part of every cache key); nvcc is asked once."""
    return "%s %s" % (nvcc.nvcc_version(), " ".join(nvcc.COMMON_FLAGS))


def plan(kernel):
    """Lower `kernel` for its own target and key it; LoweringError when it cannot be lowered."""
    ctx = lower(kernel)
    digest = ir_hash(kernel)
    return Plan(kernel, ctx, digest, compile_cache.key(digest, ctx.target.name, toolchain_id(), ctx.source))


def source_only(kernel):
    """A CompiledKernel of `kernel`'s lowering alone: target, IR hash, CUDA source and launch metadata, as
    cakec writes them (no nvcc, no cache); LoweringError when it cannot be lowered."""
    ctx = lower(kernel)
    return artifact_pb2.CompiledKernel(target=ctx.target.name, ir_hash=ir_hash(kernel), cuda_source=ctx.source,
                                       launch=ctx.launch)


def cached(p, cache):
    """The cache's entry for `p` as a BuildResult (cache_hit set), or None on a miss."""
    hit = cache.get(p.key) if cache else None
    if hit is None:
        return None
    hit.cache_hit = True
    return BuildResult(hit, build_diagnostics.resource_diagnostics(p.kernel, p.ctx, hit.resources))


def compile_plan(p, work_dir, timeout=None, cancel=None):
    """nvcc on the plan's source in `work_dir` (see nvcc.compile_cuda for timeout and cancel)."""
    return compile_source(p.ctx.source, p.ctx.target, work_dir, timeout, cancel)


def compile_source(source, target, work_dir, timeout=None, cancel=None):
    """nvcc on generated `source` for `target` in `work_dir`, with the device library on its include path."""
    src = os.path.join(work_dir, "kernel.cu")
    with open(src, "w") as f:
        f.write(source)
    return nvcc.compile_cuda(src, target, work_dir, include_dirs=[DEVICE_INCLUDE], timeout=timeout, cancel=cancel)


def nvcc_failed(p, error):
    """The BuildResult of an nvcc.NvccError: its messages at the IR paths of the failing lines."""
    return BuildResult(None, build_diagnostics.nvcc_errors(p.ctx.source, error.stderr, p.kernel, p.ctx))


def package(p, art, cache):
    """The CompiledKernel of nvcc's artifacts with ptxas' resource findings; stored in `cache` if given."""
    usage = ptxas_report.parse(art.ptxas_report).get(p.ctx.launch.symbol, artifact_pb2.ResourceUsage())
    compiled = artifact_pb2.CompiledKernel(
        target=p.ctx.target.name,
        ir_hash=p.digest,
        cubin=art.cubin,
        ptx=art.ptx,
        cuda_source=p.ctx.source,
        launch=p.ctx.launch,
        resources=usage,
        toolchain=toolchain_id(),
    )
    if cache:
        cache.put(p.key, compiled)
    return BuildResult(compiled, build_diagnostics.resource_diagnostics(p.kernel, p.ctx, usage))


def build(kernel, cache=None, timeout=None, cancel=None, verify=True):
    """Verify, lower and compile `kernel` for its own target; cache=None uses the default cache.

    The verifier's diagnostics come first in the result; with an error among them nothing
    is lowered. `verify=False` skips verification: for tests of lowering and the build
    alone, and for callers that have just verified the kernel (the compiler service).
    `timeout` and `cancel` bound nvcc (see nvcc.compile_cuda)."""
    verified = []
    if verify:
        verified = verifier.verify(kernel)
        if verifier.has_errors(verified):
            return BuildResult(None, verified)
    result = _build_verified(kernel, compile_cache.default_cache() if cache is None else cache, timeout, cancel)
    result.diagnostics = verified + list(result.diagnostics)
    return result


def _build_verified(kernel, cache, timeout, cancel):
    try:
        p = plan(kernel)
    except LoweringError as e:
        return BuildResult(None, [build_diagnostics.lowering_error(e)])
    hit = cached(p, cache)
    if hit is not None:
        return hit
    with tempfile.TemporaryDirectory(prefix="cake-build-") as tmp:
        try:
            art = compile_plan(p, tmp, timeout, cancel)
        except nvcc.NvccError as e:
            return nvcc_failed(p, e)
    return package(p, art, cache)


def has_errors(diags):
    return any(d.severity == diagnostics_pb2.SEVERITY_ERROR for d in diags)

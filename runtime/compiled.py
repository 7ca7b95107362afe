"""Launch a CompiledKernel artifact on torch tensors, as its LaunchMetadata says.

The runtime never re-derives what the compiler decided: the argument ABI, grid
expressions, block, cluster, shared bytes and tensor-map boxes all come from the
metadata. It checks the call against the contract (dtypes, shapes, alignment,
constraints) before launching, and says exactly what is wrong otherwise.
"""

import ctypes

import torch
from cake.compiler.v1 import artifact_pb2
from cake.ir.v1 import ir_pb2

from compiler.ir.expr import evaluate
from runtime.loader import Module, device_attribute
from runtime.tensor_map import SWIZZLE_NAMES, encode_tiled

TORCH_DTYPES = {
    ir_pb2.DTYPE_BF16: torch.bfloat16,
    ir_pb2.DTYPE_F16: torch.float16,
    ir_pb2.DTYPE_F32: torch.float32,
    ir_pb2.DTYPE_F64: torch.float64,
    ir_pb2.DTYPE_I8: torch.int8,
    ir_pb2.DTYPE_I32: torch.int32,
    ir_pb2.DTYPE_I64: torch.int64,
}
SCALAR_CTYPES = {
    ir_pb2.DTYPE_F32: ctypes.c_float,
    ir_pb2.DTYPE_F64: ctypes.c_double,
    ir_pb2.DTYPE_I32: ctypes.c_int32,
    ir_pb2.DTYPE_I64: ctypes.c_int64,
    ir_pb2.DTYPE_U32: ctypes.c_uint32,
}

class LaunchError(ValueError):
    """A call does not satisfy the kernel's contract; the message names what is wrong."""


class CompiledKernelRunner:
    """A loaded CompiledKernel; call it with the params' tensors and scalars by name."""

    def __init__(self, compiled):
        if not isinstance(compiled, artifact_pb2.CompiledKernel):
            raise TypeError("expected a cake.compiler.v1.CompiledKernel")
        self.compiled = compiled
        self.md = compiled.launch
        self.kernel = Module(compiled.cubin).kernel(self.md.symbol)
        self._maps = {}
        self._prepared = {}
        self._block = tuple(self.md.block)
        self._cluster = tuple(self.md.cluster) or None
        self.kernel.set_dynamic_shared_memory(self.md.dynamic_shared_bytes)

    def bind_shapes(self, tensors, symbols=None):
        """Shape symbols' values, read off the tensors' shapes and checked for consistency.

        `symbols` gives the values of symbols no tensor's shape determines (e.g. how many
        ranges a database is split into); a symbol both give must agree.
        """
        env = {}
        params = {p.name: p for p in self.md.params}
        known = {s.name for s in self.md.symbols}
        for name, value in (symbols or {}).items():
            if name not in known:
                raise LaunchError("%r is not a symbol of this kernel (its symbols: %s)" % (name, ", ".join(sorted(known))))
            env[name] = int(value)
        for s in self.md.symbols:
            if s.HasField("value"):
                if s.name in env and env[s.name] != s.value:
                    raise LaunchError("%s = %d, but the kernel is specialized to %d" % (s.name, env[s.name], s.value))
                env[s.name] = s.value
        for name, p in params.items():
            if p.kind != ir_pb2.PARAM_KIND_TENSOR:
                continue
            t = tensors.get(name)
            if t is None:
                raise LaunchError("missing tensor %r" % name)
            if t.dim() != len(p.shape):
                raise LaunchError("%s must have %d dims, got shape %s" % (name, len(p.shape), tuple(t.shape)))
            for e, size in zip(p.shape, t.shape):
                if e.WhichOneof("kind") == "sym" and e.sym not in env:
                    env[e.sym] = int(size)
        for name, p in params.items():
            if p.kind != ir_pb2.PARAM_KIND_TENSOR:
                continue
            want = tuple(evaluate(e, env) for e in p.shape)
            if tuple(tensors[name].shape) != want:
                raise LaunchError("%s has shape %s but the other arguments imply %s" % (name, tuple(tensors[name].shape), want))
        return env

    def check(self, tensors, env):
        for s in self.md.symbols:
            v = env.get(s.name)
            if v is None or not s.min <= v <= s.max:
                raise LaunchError("%s = %s is outside [%d, %d]" % (s.name, v, s.min, s.max))
        for c in self.md.constraints:
            if not evaluate(c.expr, env):
                raise LaunchError("contract violated: %s (%s)" % (c.doc, env))
        for p in self.md.params:
            if p.kind != ir_pb2.PARAM_KIND_TENSOR:
                continue
            t = tensors[p.name]
            if not t.is_cuda:
                raise LaunchError("%s must be a CUDA tensor, got %s" % (p.name, t.device))
            if t.dtype != TORCH_DTYPES[p.dtype]:
                raise LaunchError("%s must be %s, got %s" % (p.name, TORCH_DTYPES[p.dtype], t.dtype))
            if not t.is_contiguous():
                raise LaunchError("%s must be contiguous" % p.name)
            if p.align_bytes and t.data_ptr() % p.align_bytes:
                raise LaunchError("%s must be %d-byte aligned" % (p.name, p.align_bytes))

    def _tensor_map(self, arg, tensor):
        k = (arg.name, tensor.data_ptr(), tuple(tensor.shape))
        m = self._maps.get(k)
        if m is None:
            m = encode_tiled(tensor, list(arg.box), swizzle=SWIZZLE_NAMES[arg.swizzle])
            if len(self._maps) > 256:  # callers that bring new tensors every call must not grow it forever
                self._maps.clear()
            self._maps[k] = m
        return m.arg

    def args(self, tensors, scalars, env, keep_maps=True):
        """The launch's ctypes arguments; keep_maps=False encodes tensor maps without caching them
        (the cache keeps each mapped tensor alive; runtime/fast_launch.py keys its own)."""
        out = []
        for a in self.md.args:
            if a.kind == artifact_pb2.ARG_KIND_POINTER:
                out.append(ctypes.c_void_p(tensors[a.source].data_ptr()))
            elif a.kind == artifact_pb2.ARG_KIND_SCALAR:
                if a.source not in scalars:
                    raise LaunchError("missing scalar %r" % a.source)
                out.append(SCALAR_CTYPES[a.dtype](scalars[a.source]))
            elif a.kind == artifact_pb2.ARG_KIND_SYMBOL:
                out.append(ctypes.c_int64(env[a.source]))
            elif a.kind == artifact_pb2.ARG_KIND_TENSOR_MAP:
                if keep_maps:
                    out.append(self._tensor_map(a, tensors[a.source]))
                else:
                    out.append(encode_tiled(tensors[a.source], list(a.box), swizzle=SWIZZLE_NAMES[a.swizzle]).arg)
            else:
                raise LaunchError("argument %r has no kind" % a.name)
        return out

    def grid(self, env):
        if self.md.persistent:
            sms = device_attribute("MULTIPROCESSOR_COUNT", torch.cuda.current_device())
            return (sms * max(1, self.md.blocks_per_sm),)
        return tuple(max(1, evaluate(g, env)) for g in self.md.grid)

    def __call__(self, scalars=None, stream=None, symbols=None, **tensors):
        # Checked calls are remembered by what the checks read (addresses, shapes, dtypes,
        # scalars, symbols), so a repeated call costs one dictionary lookup before the launch.
        key = (tuple((n, t.data_ptr(), tuple(t.shape), t.dtype, t.device) for n, t in sorted(tensors.items())),
               tuple(sorted((scalars or {}).items())), tuple(sorted((symbols or {}).items())))
        prepared = self._prepared.get(key)
        if prepared is None:
            env = self.bind_shapes(tensors, symbols)
            self.check(tensors, env)
            prepared = (self.grid(env), self.args(tensors, scalars or {}, env))
            if len(self._prepared) > 256:
                self._prepared.clear()
            self._prepared[key] = prepared
        grid, args = prepared
        self.kernel.launch(
            grid=grid,
            block=self._block,
            args=args,
            shared_bytes=self.md.dynamic_shared_bytes,
            stream=stream,
            cluster=self._cluster,
        )

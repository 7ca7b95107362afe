"""Launches with microseconds of host cost: checked once per (shapes, pointers), then one driver call.

`CompiledKernelRunner` checks every call against the contract and builds its argument
array; that costs tens of microseconds in Python. `FastLaunch` does those checks once
per key (the tensors' addresses, shapes and dtypes: what the checks and the tensor
maps read), keeps the packed void*[] argument array, and launches it with libcuda's
cuLaunchKernel through ctypes on torch's current stream. Pointer arguments named
`late` (outputs a caller allocates fresh on every call) are left out of the key and
patched into the prepared array per call, after a shape and dtype check of their own.

A launch inside CUDA graph capture records the same kernel node as any launch on the
capturing stream; prepared arrays are host memory the driver copies at launch, so a
captured graph does not refer to them.
"""

import ctypes

import torch
from cake.compiler.v1 import artifact_pb2

from runtime import loader

CUDA_SUCCESS = 0
CUDA_ERROR_INVALID_CONTEXT = 201
MAX_PREPARED = 512  # prepared launches kept per kernel; beyond it the oldest half are dropped

_libcuda = None


def _driver():
    """libcuda's cuLaunchKernel and cuGetErrorName through ctypes (loaded once)."""
    global _libcuda
    if _libcuda is None:
        lib = ctypes.CDLL("libcuda.so.1")
        lib.cuLaunchKernel.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 7 + [ctypes.c_void_p] * 3
        lib.cuLaunchKernel.restype = ctypes.c_int
        lib.cuGetErrorName.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]
        lib.cuGetErrorName.restype = ctypes.c_int
        _libcuda = lib
    return _libcuda


def _error_name(code):
    name = ctypes.c_char_p()
    _driver().cuGetErrorName(code, ctypes.byref(name))
    return (name.value or b"CUDA error %d" % code).decode()


if hasattr(torch._C, "_cuda_getCurrentRawStream"):
    _raw_stream = torch._C._cuda_getCurrentRawStream
else:  # builds without CUDA (CPU tests, whose launches are stand-ins): the null stream

    def _raw_stream(device_index):
        return 0


raw_stream = _raw_stream  # raw_stream(device_index): torch's current stream there, as an address (launch_on's stream)


class Prepared:
    """One checked launch: grid, block, shared bytes and the packed argument array."""

    __slots__ = ("grid", "block", "shared", "args", "array", "address", "late", "late_specs")

    def __init__(self, grid, block, shared, args, late, late_specs):
        self.grid = tuple(grid) + (1,) * (3 - len(grid))
        self.block = tuple(block) + (1,) * (3 - len(block))
        self.shared = shared
        self.args = args  # the ctypes objects the array points at: kept alive with it
        self.array = (ctypes.c_void_p * max(1, len(args)))(*[ctypes.addressof(a) for a in args])
        self.address = ctypes.addressof(self.array)
        self.late = late  # name -> the c_void_p argument patched per call
        self.late_specs = late_specs  # name -> (shape, dtype) the late tensor must have


class FastLaunch:
    """Prepared launches of one loaded kernel (a runtime.compiled.CompiledKernelRunner)."""

    def __init__(self, runner, late=()):
        md = runner.md
        if runner._cluster and any(c > 1 for c in runner._cluster):
            raise ValueError("FastLaunch launches kernels without clusters; %s has cluster %s" % (md.symbol, runner._cluster))
        pointer_sources = {a.source for a in md.args if a.kind == artifact_pb2.ARG_KIND_POINTER}
        mapped = {a.source for a in md.args if a.kind == artifact_pb2.ARG_KIND_TENSOR_MAP}
        for name in late:
            if name not in pointer_sources or name in mapped:
                raise ValueError("late argument %r must be a plain pointer argument of %s" % (name, md.symbol))
        self.runner = runner
        self.late = tuple(late)
        self.function = int(runner.kernel.function)
        self._prepared = {}

    def prepare(self, tensors, scalars=None, symbols=None):
        """Check `tensors` (by name) against the contract once; a Prepared for them.

        `symbols` gives the values of symbols no tensor's shape determines (as for
        CompiledKernelRunner.bind_shapes).

        The Prepared holds no reference to the tensors: its key (the caller's) names their
        addresses and shapes, and a tensor map of an address and shape describes any tensor
        found there later as well as the first one, so caching it keeps no memory alive.
        """
        runner = self.runner
        env = runner.bind_shapes(tensors, symbols)
        runner.check(tensors, env)
        args = runner.args(tensors, scalars or {}, env, keep_maps=False)
        late = {}
        for a, value in zip(runner.md.args, args):
            if a.kind == artifact_pb2.ARG_KIND_POINTER and a.source in self.late:
                late[a.source] = value
        specs = {n: (tuple(tensors[n].shape), tensors[n].dtype) for n in self.late}
        return Prepared(runner.grid(env), runner._block, runner.md.dynamic_shared_bytes, args, late, specs)

    def get(self, key, tensors, scalars=None, symbols=None):
        """The Prepared launch for `key` (the caller's summary of what prepare reads), made once."""
        prepared = self._prepared.get(key)
        if prepared is None:
            prepared = self.prepare(tensors, scalars, symbols)
            if len(self._prepared) >= MAX_PREPARED:
                for old in list(self._prepared)[: MAX_PREPARED // 2]:
                    del self._prepared[old]
            self._prepared[key] = prepared
        return prepared

    def launch(self, prepared, device_index, **late):
        """Launch `prepared` on torch's current stream, with the late pointers given by name."""
        for name, tensor in late.items():
            shape, dtype = prepared.late_specs[name]
            if tensor.shape != shape or tensor.dtype != dtype or not tensor.is_contiguous():
                raise ValueError("%s must be a contiguous %s tensor of shape %s, got %s %s"
                                 % (name, dtype, shape, tensor.dtype, tuple(tensor.shape)))
            prepared.late[name].value = tensor.data_ptr()
        self.launch_on(prepared, _raw_stream(device_index))

    def launch_on(self, prepared, stream, *late_pointers):
        """Launch `prepared` on `stream` (a raw cudaStream_t: `raw_stream(device_index)`), its late pointers given as
        addresses in `late`'s order, unchecked: for a caller that allocated those tensors itself, contiguous and
        of the shapes and dtypes they were prepared with (the per-call path of a search: no Python check)."""
        for name, address in zip(self.late, late_pointers):
            prepared.late[name].value = address
        g, b = prepared.grid, prepared.block
        code = _driver().cuLaunchKernel(self.function, g[0], g[1], g[2], b[0], b[1], b[2], prepared.shared, stream,
                                        prepared.address, None)
        if code == CUDA_ERROR_INVALID_CONTEXT:  # a thread that never made torch's context current
            loader.ensure_context()
            code = _driver().cuLaunchKernel(self.function, g[0], g[1], g[2], b[0], b[1], b[2], prepared.shared, stream,
                                            prepared.address, None)
        if code != CUDA_SUCCESS:
            raise RuntimeError("cuLaunchKernel(%s) failed: %s" % (self.runner.md.symbol, _error_name(code)))

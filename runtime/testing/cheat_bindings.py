"""Launchers for the cheat suite's kernels (runtime/testing/cheats/gemv_cheats.cu).

Each binding takes a loaded runtime.loader.Module and returns launch(outputs, inputs)
for the GEMV contract (runtime/testing/gemv_contract.py). All launch on torch's
current stream except side_stream, whose whole cheat is where it launches.
"""

import ctypes

import torch

BLOCK = 256  # threads per block: 8 warps, one row per warp
ROWS_PER_BLOCK = BLOCK // 32
MAX_BLOCKS = 4096  # grid-stride beyond this


def _grid(m):
    return (max(1, min(-(-m // ROWS_PER_BLOCK), MAX_BLOCKS)),)


def _args(outputs, inputs):
    """(m, ctypes arguments) for (y, A, x, m, n), after checking what the kernels assume."""
    (y,), (a, x) = outputs, inputs
    for name, t in (("y", y), ("A", a), ("x", x)):
        if t.dtype != torch.float32 or not t.is_cuda or not t.is_contiguous():
            raise ValueError("gemv: %s must be a contiguous float32 CUDA tensor, got %s on %s" % (name, t.dtype, t.device))
    m, n = a.shape
    if tuple(x.shape) != (n,) or tuple(y.shape) != (m,):
        raise ValueError("gemv: shapes A %s, x %s, y %s do not fit y = A @ x" % (tuple(a.shape), tuple(x.shape), tuple(y.shape)))
    ptrs = [ctypes.c_void_p(t.data_ptr()) for t in (y, a, x)]
    return m, ptrs + [ctypes.c_int(m), ctypes.c_int(n)]


def _on_current_stream(kernel_name):
    """A binding launching `kernel_name` once per call on torch's current stream."""

    def bind(module):
        kernel = module.kernel(kernel_name)

        def launch(outputs, inputs):
            m, args = _args(outputs, inputs)
            kernel.launch(grid=_grid(m), block=(BLOCK,), args=args)

        return launch

    return bind


honest = _on_current_stream("cake_gemv")
writes_nothing = _on_current_stream("cake_gemv_writes_nothing")
zeros = _on_current_stream("cake_gemv_zeros")
tuned_shape_only = _on_current_stream("cake_gemv_tuned_shape_only")
mutates_input = _on_current_stream("cake_gemv_mutates_input")
nan_on_large = _on_current_stream("cake_gemv_nan_on_large")
illegal_address = _on_current_stream("cake_gemv_illegal_address")
hang = _on_current_stream("cake_gemv_hang")


def cached(module):
    """The caching kernel, then the one-thread kernel that marks its cache valid."""
    kernel, commit = module.kernel("cake_gemv_cached"), module.kernel("cake_gemv_cached_commit")

    def launch(outputs, inputs):
        m, args = _args(outputs, inputs)
        kernel.launch(grid=_grid(m), block=(BLOCK,), args=args)
        commit.launch(grid=(1,), block=(1,), args=[])

    return launch


def side_stream(module):
    """The honest kernel on a private stream, neither waiting for nor waited on by the current one."""
    kernel = module.kernel("cake_gemv")
    stream = torch.cuda.Stream()

    def launch(outputs, inputs):
        m, args = _args(outputs, inputs)
        kernel.launch(grid=_grid(m), block=(BLOCK,), args=args, stream=stream.cuda_stream)

    return launch

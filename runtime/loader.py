"""Load cubins and launch their kernels through NVIDIA's CUDA driver API (cuda-python).

The runtime never compiles: it takes artifacts (cubin bytes plus launch metadata)
and launches them on torch's current stream, so launches order correctly with
the surrounding PyTorch work. Arguments are packed by hand into a void*[] so
that by-value structs (a 128-byte CUtensorMap) pass exactly as the ABI wants.
"""

import ctypes
import threading

from cuda.bindings import driver


class CudaError(RuntimeError):
    """A CUDA driver call failed; `code` is the CUresult name."""

    def __init__(self, call, code):
        _, name = driver.cuGetErrorName(code)
        _, text = driver.cuGetErrorString(code)
        self.code = name.decode() if isinstance(name, bytes) else str(code)
        msg = text.decode() if isinstance(text, bytes) else ""
        super().__init__("%s failed: %s (%s)" % (call, self.code, msg))


def check(call, result):
    """Unpack a cuda-python (err, *values) tuple; raise CudaError on failure."""
    err, *values = result
    if err != driver.CUresult.CUDA_SUCCESS:
        raise CudaError(call, err)
    if not values:
        return None
    return values[0] if len(values) == 1 else tuple(values)


_init_lock = threading.Lock()
_initialized = False


def ensure_context():
    """Initialise the driver and make torch's primary context current on this thread."""
    global _initialized
    import torch

    with _init_lock:
        if not _initialized:
            check("cuInit", driver.cuInit(0))
            _initialized = True
    torch.cuda.init()
    torch.cuda.current_device()
    # torch uses the primary context; retain it so module loads land in the same context.
    dev = check("cuDeviceGet", driver.cuDeviceGet(torch.cuda.current_device()))
    ctx = check("cuDevicePrimaryCtxRetain", driver.cuDevicePrimaryCtxRetain(dev))
    check("cuCtxSetCurrent", driver.cuCtxSetCurrent(ctx))


class Kernel:
    """One __global__ function of a loaded module."""

    def __init__(self, module, function, name):
        self._module = module  # keeps the module alive as long as the function
        self.function = function
        self.name = name
        self._dynamic_smem_limit = 48 * 1024

    def set_dynamic_shared_memory(self, nbytes):
        """Opt in to more than 48 KB of dynamic shared memory for this function."""
        if nbytes > self._dynamic_smem_limit:
            attr = driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
            check("cuFuncSetAttribute", driver.cuFuncSetAttribute(self.function, attr, nbytes))
            self._dynamic_smem_limit = nbytes

    def launch(self, grid, block, args, shared_bytes=0, stream=None, cluster=None):
        """Launch on `stream` (default: torch's current stream) with ctypes-typed `args`."""
        import torch

        self.set_dynamic_shared_memory(shared_bytes)
        if stream is None:
            stream = torch.cuda.current_stream().cuda_stream
        # Each argument is a ctypes object; the driver reads it through a void*[] of addresses.
        ptrs = (ctypes.c_void_p * max(1, len(args)))(*[ctypes.addressof(a) for a in args])
        grid = tuple(grid) + (1,) * (3 - len(grid))
        block = tuple(block) + (1,) * (3 - len(block))
        if cluster and any(c > 1 for c in cluster):
            self._launch_ex(grid, block, shared_bytes, stream, ptrs, tuple(cluster) + (1,) * (3 - len(cluster)))
        else:
            check(
                "cuLaunchKernel",
                driver.cuLaunchKernel(self.function, *grid, *block, shared_bytes, stream, ctypes.addressof(ptrs), 0),
            )

    def _launch_ex(self, grid, block, shared_bytes, stream, ptrs, cluster):
        config = driver.CUlaunchConfig()
        config.gridDimX, config.gridDimY, config.gridDimZ = grid
        config.blockDimX, config.blockDimY, config.blockDimZ = block
        config.sharedMemBytes = shared_bytes
        config.hStream = stream
        attr = driver.CUlaunchAttribute()
        attr.id = driver.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
        attr.value.clusterDim.x, attr.value.clusterDim.y, attr.value.clusterDim.z = cluster
        config.attrs = [attr]
        config.numAttrs = 1
        check("cuLaunchKernelEx", driver.cuLaunchKernelEx(config, ctypes.addressof(ptrs), 0))


class Module:
    """A cubin loaded into torch's CUDA context."""

    def __init__(self, cubin):
        ensure_context()
        self.handle = check("cuModuleLoadData", driver.cuModuleLoadData(cubin))

    def kernel(self, name):
        fn = check("cuModuleGetFunction", driver.cuModuleGetFunction(self.handle, name.encode()))
        return Kernel(self, fn, name)

"""Load cubins and launch their kernels through NVIDIA's CUDA driver API (cuda-python).

The runtime never compiles: it takes artifacts (cubin bytes plus launch metadata)
and launches them on torch's current stream, so launches order correctly with
the surrounding PyTorch work. Arguments are packed by hand into a void*[] so
that by-value structs (a 128-byte CUtensorMap) pass exactly as the ABI wants.
"""

import ctypes
import threading

from cuda.bindings import driver

from compiler.targets import database

DEFAULT_DYNAMIC_SMEM = 48 * 1024  # what every kernel may use without opting in
# The most threads per block any target allows (compiler/targets' database).
MAX_THREADS_PER_BLOCK = max(database.limits(t).threads_per_block_max for t in database.target_names())


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
_primary_contexts = {}  # device ordinal -> retained primary context (retained once, never released)


def _init_driver():
    """cuInit once per process; call with _init_lock held."""
    global _initialized
    if not _initialized:
        check("cuInit", driver.cuInit(0))
        _initialized = True


def ensure_context():
    """Initialise the driver and make torch's primary context current on this thread."""
    import torch

    with _init_lock:
        _init_driver()
        torch.cuda.init()
        ordinal = torch.cuda.current_device()
        # torch uses the primary context; retain it so module loads land in the same context.
        if ordinal not in _primary_contexts:
            dev = check("cuDeviceGet", driver.cuDeviceGet(ordinal))
            _primary_contexts[ordinal] = check("cuDevicePrimaryCtxRetain", driver.cuDevicePrimaryCtxRetain(dev))
        ctx = _primary_contexts[ordinal]
    check("cuCtxSetCurrent", driver.cuCtxSetCurrent(ctx))


def device_attribute(name, ordinal=0):
    """The integer device attribute CU_DEVICE_ATTRIBUTE_<name> of device `ordinal`."""
    with _init_lock:
        _init_driver()
    dev = check("cuDeviceGet", driver.cuDeviceGet(ordinal))
    attr = getattr(driver.CUdevice_attribute, "CU_DEVICE_ATTRIBUTE_" + name)
    return check("cuDeviceGetAttribute", driver.cuDeviceGetAttribute(attr, dev))


def launch_dims(grid, block):
    """(grid, block) as 3-tuples, validated before the driver sees them.

    The driver answers a zero or oversized dimension with a bare CUDA_ERROR_INVALID_VALUE;
    saying which dimension is wrong saves the agent a guess.
    """
    grid, block = tuple(grid), tuple(block)
    for name, dims in (("grid", grid), ("block", block)):
        if not 1 <= len(dims) <= 3:
            raise ValueError("%s must have 1 to 3 dimensions, got %r" % (name, dims))
        if any(int(d) != d or d < 1 for d in dims):
            raise ValueError("%s dimensions must be positive integers, got %r" % (name, dims))
    threads = block[0] * (block[1] if len(block) > 1 else 1) * (block[2] if len(block) > 2 else 1)
    if threads > MAX_THREADS_PER_BLOCK:
        raise ValueError("block %r has %d threads; the limit is %d" % (block, threads, MAX_THREADS_PER_BLOCK))
    return grid + (1,) * (3 - len(grid)), block + (1,) * (3 - len(block))


def check_shared_bytes(nbytes, optin_limit):
    """Raise ValueError when a launch asks for more dynamic shared memory than the device allows."""
    if nbytes < 0 or nbytes > optin_limit:
        raise ValueError(
            "dynamic shared memory of %d bytes is outside what this device allows per block (0..%d)"
            % (nbytes, optin_limit)
        )


class Kernel:
    """One __global__ function of a loaded module."""

    def __init__(self, module, function, name):
        self._module = module  # keeps the module alive as long as the function
        self.function = function
        self.name = name
        self._dynamic_smem_limit = DEFAULT_DYNAMIC_SMEM

    def set_dynamic_shared_memory(self, nbytes):
        """Opt in to more than 48 KB of dynamic shared memory for this function."""
        if nbytes > self._dynamic_smem_limit:
            import torch

            check_shared_bytes(nbytes, device_attribute("MAX_SHARED_MEMORY_PER_BLOCK_OPTIN", torch.cuda.current_device()))
            attr = driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
            check("cuFuncSetAttribute", driver.cuFuncSetAttribute(self.function, attr, nbytes))
            self._dynamic_smem_limit = nbytes

    def launch(self, grid, block, args, shared_bytes=0, stream=None, cluster=None):
        """Launch on `stream` (default: torch's current stream) with ctypes-typed `args`."""
        import torch

        grid, block = launch_dims(grid, block)
        self.set_dynamic_shared_memory(shared_bytes)
        if stream is None:
            stream = torch.cuda.current_stream().cuda_stream
        # Each argument is a ctypes object; the driver reads it through a void*[] of addresses.
        ptrs = (ctypes.c_void_p * max(1, len(args)))(*[ctypes.addressof(a) for a in args])
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
        check("cuLaunchKernelEx", driver.cuLaunchKernelEx(config, self.function, ctypes.addressof(ptrs), 0))


class Module:
    """A cubin loaded into torch's CUDA context."""

    def __init__(self, cubin):
        ensure_context()
        self.handle = check("cuModuleLoadData", driver.cuModuleLoadData(cubin))

    def kernel(self, name):
        fn = check("cuModuleGetFunction", driver.cuModuleGetFunction(self.handle, name.encode()))
        return Kernel(self, fn, name)

"""Run nvcc for one CUDA source and one SM target: cubin, PTX and ptxas' resource report.

This is the build step the compiler and the tests share. It does not interpret
the report (see ptxas_report.py) and does not cache (see cache.py).
"""

import dataclasses
import os
import shutil
import subprocess

COMMON_FLAGS = ("-std=c++17", "-O3", "-lineinfo", "--expt-relaxed-constexpr")


class NvccNotFound(RuntimeError):
    """No nvcc on this machine."""


class NvccError(RuntimeError):
    """nvcc or ptxas rejected the source; `stderr` holds their messages."""

    def __init__(self, message, stderr):
        super().__init__(message)
        self.stderr = stderr


@dataclasses.dataclass(frozen=True)
class CudaArtifacts:
    cubin: bytes
    ptx: str
    ptxas_report: str  # ptxas -v output: registers, spills, stack, shared memory per entry


def find_nvcc():
    """Path of nvcc: $CUDA_HOME/bin, then /usr/local/cuda/bin, then PATH."""
    for cand in (
        os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"), "bin", "nvcc"),
        "/usr/local/cuda/bin/nvcc",
        shutil.which("nvcc"),
    ):
        if cand and os.path.exists(cand):
            return cand
    raise NvccNotFound("nvcc not found: install the CUDA 13 toolkit or set CUDA_HOME")


def nvcc_version():
    """nvcc's version banner (part of every compile-cache key)."""
    out = subprocess.run([find_nvcc(), "--version"], capture_output=True, text=True, check=True)
    return out.stdout.strip().splitlines()[-1]


def _run(cmd, cwd):
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd)
    if proc.returncode != 0:
        raise NvccError("nvcc failed (exit %d)" % proc.returncode, proc.stderr)
    return proc.stderr


def compile_cuda(source_path, target, work_dir, include_dirs=(), defines=(), flags=()):
    """Compile `source_path` for `target` (a compiler.targets.Target) in `work_dir`."""
    nvcc = find_nvcc()
    base = list(COMMON_FLAGS) + ["-I" + d for d in include_dirs] + ["-D" + d for d in defines] + list(flags)
    cubin_path = os.path.join(work_dir, "kernel.cubin")
    ptx_path = os.path.join(work_dir, "kernel.ptx")
    report = _run([nvcc, *base, "-cubin", target.gencode, "-Xptxas=-v", source_path, "-o", cubin_path], work_dir)
    _run([nvcc, *base, "-ptx", "-arch=compute_" + target.arch, source_path, "-o", ptx_path], work_dir)
    with open(cubin_path, "rb") as f:
        cubin = f.read()
    with open(ptx_path) as f:
        ptx = f.read()
    return CudaArtifacts(cubin=cubin, ptx=ptx, ptxas_report=report)

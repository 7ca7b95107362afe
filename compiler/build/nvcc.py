"""Run nvcc for one CUDA source and one SM target: cubin, PTX and ptxas' resource report.

This is the build step the compiler and the tests share. It does not interpret
the report (see ptxas_report.py) and does not cache (see cache.py).

One nvcc run makes both artifacts: the cubin, and with --keep the PTX it was
assembled from (the same text `nvcc -ptx -arch=compute_XX` prints), so the front
end runs once. nvcc runs in its own process group, so that a time limit or a
cancellation kills it with every child (cicc, ptxas, the host compiler).
"""

import dataclasses
import functools
import os
import shutil
import signal
import subprocess
import time

COMMON_FLAGS = ("-std=c++17", "-O3", "-lineinfo", "--expt-relaxed-constexpr")


class NvccNotFound(RuntimeError):
    """No nvcc on this machine."""


class NvccError(RuntimeError):
    """nvcc or ptxas rejected the source; `stderr` holds their messages."""

    def __init__(self, message, stderr):
        super().__init__(message)
        self.stderr = stderr


class NvccTimeout(RuntimeError):
    """nvcc ran past its time limit and was killed; `seconds` is the limit."""

    def __init__(self, seconds):
        super().__init__("nvcc ran past its limit of %g s and was killed" % seconds)
        self.seconds = seconds


class NvccCancelled(RuntimeError):
    """The caller cancelled the compile; nvcc was killed."""


# How often a running nvcc is checked against its time limit and for cancellation, in seconds.
_POLL_SECONDS = 0.05


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


@functools.lru_cache(maxsize=None)
def nvcc_version():
    """nvcc's version banner (part of every compile-cache key), asked once per process."""
    out = subprocess.run([find_nvcc(), "--version"], capture_output=True, text=True, check=True)
    return out.stdout.strip().splitlines()[-1]


def _run(cmd, cwd, timeout, cancel):
    """nvcc's stderr; NvccError when it fails, NvccTimeout / NvccCancelled after killing it."""
    proc = subprocess.Popen(
        cmd, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True,
    )
    end = None if timeout is None else time.monotonic() + timeout
    try:
        while True:
            try:
                _, stderr = proc.communicate(timeout=_POLL_SECONDS)
                break
            except subprocess.TimeoutExpired:
                if cancel is not None and cancel.is_set():
                    raise NvccCancelled("the compile was cancelled; nvcc was killed") from None
                if end is not None and time.monotonic() >= end:
                    raise NvccTimeout(timeout) from None
    except BaseException:
        _kill_group(proc)
        raise
    if proc.returncode != 0:
        raise NvccError("nvcc failed (exit %d)" % proc.returncode, stderr)
    return stderr


def _kill_group(proc):
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.communicate()


def compile_cuda(source_path, target, work_dir, include_dirs=(), defines=(), flags=(), timeout=None, cancel=None):
    """Compile `source_path` for `target` (a compiler.targets.Target) in `work_dir`.

    `timeout`: seconds nvcc may run (NvccTimeout past it); `cancel`: a threading.Event
    whose setting kills nvcc (NvccCancelled). Either way nothing of nvcc's keeps running.
    """
    nvcc = find_nvcc()
    base = list(COMMON_FLAGS) + ["-I" + d for d in include_dirs] + ["-D" + d for d in defines] + list(flags)
    keep = os.path.join(work_dir, "nvcc-keep")
    os.makedirs(keep, exist_ok=True)
    cubin_path = os.path.join(work_dir, "kernel.cubin")
    report = _run(
        [nvcc, *base, "-cubin", target.gencode, "-Xptxas=-v", "--keep", "--keep-dir", keep, source_path,
         "-o", cubin_path],
        work_dir, timeout, cancel,
    )
    ptx_path = os.path.join(keep, os.path.splitext(os.path.basename(source_path))[0] + ".ptx")
    with open(cubin_path, "rb") as f:
        cubin = f.read()
    with open(ptx_path) as f:
        ptx = f.read()
    return CudaArtifacts(cubin=cubin, ptx=ptx, ptxas_report=report)

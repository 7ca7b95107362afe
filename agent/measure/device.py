"""Is there a GPU to measure on? Asked in a child process, so this one never touches CUDA.

The evaluation workers own the GPU (runtime/pool.py: the parent never touches it);
probing the driver here in a short-lived child keeps it that way.
"""

import dataclasses
import json
import subprocess
import sys

from compiler.targets import TARGETS

_PROBE = r"""
import json
try:
    from cuda.bindings import driver
except ImportError as e:
    print(json.dumps({"reason": "cuda-python does not import: %s" % e})); raise SystemExit
try:
    err, = driver.cuInit(0)
except RuntimeError as e:
    print(json.dumps({"reason": "no CUDA driver: %s" % e})); raise SystemExit
if err != driver.CUresult.CUDA_SUCCESS:
    print(json.dumps({"reason": "cuInit failed: %s" % err})); raise SystemExit
err, count = driver.cuDeviceGetCount()
if err != driver.CUresult.CUDA_SUCCESS or count == 0:
    print(json.dumps({"reason": "the CUDA driver found no device"})); raise SystemExit
_, dev = driver.cuDeviceGet(0)
a = driver.CUdevice_attribute
_, major = driver.cuDeviceGetAttribute(a.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev)
_, minor = driver.cuDeviceGetAttribute(a.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev)
_, name = driver.cuDeviceGetName(64, dev)
print(json.dumps({"name": name.split(b"\0")[0].decode(), "cc": [major, minor], "count": count}))
"""

@dataclasses.dataclass(frozen=True)
class Gpu:
    usable: bool
    description: str  # the device, or why there is none to use
    count: int = 0  # visible devices (all of GPU 0's kind on the machines we measure on)


def probe(target, timeout_s=60.0):
    """Whether GPU 0 can run `target` kernels, with a one-line description."""
    try:
        proc = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True, timeout=timeout_s)
        info = json.loads(proc.stdout.strip().splitlines()[-1]) if proc.stdout.strip() else {
            "reason": "the probe failed: %s" % proc.stderr.strip()[-300:]}
    except (subprocess.TimeoutExpired, json.JSONDecodeError) as e:
        info = {"reason": "the probe failed: %s" % e}
    if "reason" in info:
        return Gpu(False, info["reason"])
    cc = tuple(info["cc"])
    want = TARGETS.get(target)
    if want is not None and not want.runs_on(*cc):
        return Gpu(False, "%s is compute capability %d.%d: %s kernels run on %s" % (
            info["name"], cc[0], cc[1], target, want.devices))
    count = int(info.get("count", 1))
    return Gpu(True, "%s (compute capability %d.%d)%s" % (info["name"], cc[0], cc[1],
                                                         " x%d" % count if count > 1 else ""), count)

"""What a measurement ran on: GPU, clocks, driver and library versions.

Timings are comparable only on the same hardware, clocks and software, so every
TimingResult carries this record. Current clocks and the display driver come from
nvidia-smi (sampled when the record is taken), peak clocks also from the CUDA
driver; anything unavailable is None. `machine_record` is the "machine" entry of a
benchmark result file (../shared/notes/results.md): this record plus the commit
measured, the date and the peers' versions.
"""

import datetime
import os
import platform
import subprocess

from compiler import host

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The libraries a benchmark's figures depend on besides torch (the peers and Triton, which fla runs on).
PACKAGES = ("triton", "flashlib", "flash-kmeans", "fla-core", "protobuf", "grpcio")

SMI_FIELDS = (
    "pci.bus_id",
    "name",
    "driver_version",
    "clocks.sm",
    "clocks.max.sm",
    "clocks.mem",
    "clocks.max.mem",
    "temperature.gpu",
    "power.draw",
    "pstate",
)
_SMI_KEYS = {  # nvidia-smi field -> record key (units: MHz, Celsius, W)
    "name": "smi_name",
    "driver_version": "driver_version",
    "clocks.sm": "sm_clock_mhz",
    "clocks.max.sm": "sm_clock_max_mhz",
    "clocks.mem": "mem_clock_mhz",
    "clocks.max.mem": "mem_clock_max_mhz",
    "temperature.gpu": "temperature_c",
    "power.draw": "power_w",
    "pstate": "pstate",
}


def _value(text):
    text = text.strip()
    if text in ("", "N/A", "[N/A]", "[Not Supported]"):
        return None
    try:
        return float(text)
    except ValueError:
        return text


def parse_smi(text, fields=SMI_FIELDS):
    """Rows of `nvidia-smi --query-gpu=<fields> --format=csv,noheader,nounits` as dicts."""
    rows = []
    for line in text.strip().splitlines():
        cells = [c.strip() for c in line.split(",")]
        if len(cells) == len(fields):
            rows.append({f: _value(c) for f, c in zip(fields, cells)})
    return rows


def same_bus_id(a, b):
    """True when two PCI bus ids name the same device (nvidia-smi pads the domain to 8 digits)."""

    def norm(bus_id):
        *domain, bus, devfn = bus_id.strip().lower().split(":")
        return int(domain[0] if domain else "0", 16), int(bus, 16), devfn

    return norm(a) == norm(b)


def smi_record(bus_id):
    """The nvidia-smi fields of the GPU at `bus_id`, or {"smi_error": why}."""
    try:
        proc = subprocess.run(
            ["nvidia-smi", "--query-gpu=" + ",".join(SMI_FIELDS), "--format=csv,noheader,nounits"],
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return {"smi_error": "nvidia-smi unavailable: %s" % exc}
    for row in parse_smi(proc.stdout):
        if isinstance(row["pci.bus_id"], str) and same_bus_id(row["pci.bus_id"], bus_id):
            return {key: row[field] for field, key in _SMI_KEYS.items()}
    return {"smi_error": "nvidia-smi lists no GPU at %s (exit %d)" % (bus_id, proc.returncode)}


def collect(ordinal=0):
    """The record for CUDA device `ordinal`, as a JSON-able dict."""
    import cuda.bindings
    import torch
    from cuda.bindings import driver

    from runtime.loader import CudaError, check, device_attribute

    props = torch.cuda.get_device_properties(ordinal)
    dev = check("cuDeviceGet", driver.cuDeviceGet(ordinal))
    bus_id = check("cuDeviceGetPCIBusId", driver.cuDeviceGetPCIBusId(32, dev))
    # The driver fills a fixed buffer: the id ends at the first NUL (padding may follow it).
    bus_id = (bus_id.decode() if isinstance(bus_id, bytes) else str(bus_id)).split("\x00")[0].strip()
    api = check("cuDriverGetVersion", driver.cuDriverGetVersion())
    record = {
        "gpu_name": props.name,
        "compute_capability": "%d.%d" % (props.major, props.minor),
        "sm_count": props.multi_processor_count,
        "l2_cache_bytes": device_attribute("L2_CACHE_SIZE", ordinal),
        "pci_bus_id": bus_id,
        "cuda_driver_api": "%d.%d" % (api // 1000, api % 1000 // 10),
        "torch": torch.__version__,
        "torch_cuda": torch.version.cuda,
        "cuda_python": getattr(cuda.bindings, "__version__", None) or host.package_version("cuda-bindings"),
        "python": platform.python_version(),
    }
    for attr, key in (("CLOCK_RATE", "sm_clock_max_khz"), ("MEMORY_CLOCK_RATE", "mem_clock_max_khz")):
        try:  # the driver's peak clocks: deprecated attributes, still answered by current drivers
            record[key] = device_attribute(attr, ordinal)
        except CudaError:
            record[key] = None
    record.update(smi_record(bus_id))
    return record


def cake_commit():
    """The commit measured (compiler/host.commit: $CAKE_COMMIT, else this checkout's HEAD), else "unknown"."""
    return host.commit(ROOT) or "unknown"


def machine_record(ordinal=0, packages=PACKAGES):
    """A result file's "machine": the device record, the commit, the UTC time, and each package's version."""
    record = collect(ordinal)
    record["cake_commit"] = cake_commit()
    record["date"] = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    record.update({name: host.package_version(name) for name in packages})
    return record

"""The target database, read from targets.json: per SM target what code generation and
verification branch on, and per device its hardware figures.

    facts = target_facts("sm_90a")        # arch, compute capability, features, register rules
    dev = device_for("sm_90a")            # the target's default device (H200)
    dev = device_for("sm_90a", "H100-SXM")
    lim = limits("sm_90a")                # the resource limits every stage checks budgets against

Every figure in the data file is `{"value": ..., "source": ...}` (names, such as a
target's arch and feature list, are plain); a device may name a `base` device of the
same target and override some figures (H200 is an H100-SXM with more and faster
memory). Loading checks that every target and device has every field and that
every feature a target names is described, so a missing or misspelled figure fails
when the data is read, not deep inside a pass.
"""

import dataclasses
import functools
import json
import os
import types

TARGETS_JSON = os.path.join(os.path.dirname(os.path.abspath(__file__)), "targets.json")

# Scalar figures every device has, with the Python type they are read as.
_SCALARS = {
    "sms": int,
    "sm_clock_ghz": float,
    "shared_per_sm_bytes": int,
    "shared_per_block_bytes": int,
    "shared_reserved_per_block_bytes": int,
    "registers_per_sm": int,
    "registers_per_thread_max": int,
    "register_allocation_unit": int,
    "threads_per_block_max": int,
    "threads_per_sm_max": int,
    "blocks_per_sm_max": int,
    "cluster_size_max": int,
    "named_barriers_max": int,
    "tensor_memory_bytes_per_sm": int,
    "memory_gb": float,
    "hbm_bandwidth_tbps": float,
    "hbm_reachable_tbps": float,
    "l2_bytes": int,
    "l2_bandwidth_tbps": float,
    "shared_bandwidth_bytes_per_clock": int,
    "launch_overhead_us": float,
}
# Tables of figures (name -> {value, source}).
_TABLES = ("peak_tera_per_s", "latency_cycles")
# Figures only some devices have.
_OPTIONAL = ("measured_gemm_bf16_tflops",)


@dataclasses.dataclass(frozen=True)
class Limits:
    """The resource limits a schedule must fit on one SM (what the verifier checks)."""

    shared_per_block_bytes: int  # opt-in maximum of dynamic shared memory per block
    shared_per_sm_bytes: int
    shared_reserved_per_block_bytes: int  # the system's share, counted against the SM
    registers_per_sm: int
    registers_per_thread_max: int
    register_allocation_unit: int  # registers per warp are allocated in these units
    threads_per_block_max: int
    threads_per_sm_max: int
    blocks_per_sm_max: int
    cluster_size_max: int  # portable maximum; 1 where clusters do not exist
    named_barriers_max: int
    tensor_memory_bytes_per_sm: int  # 0 where tensor memory does not exist


@dataclasses.dataclass(frozen=True)
class Device:
    """One device of one SM target, with its hardware figures (units in the names)."""

    target: str
    name: str
    sms: int
    sm_clock_ghz: float
    shared_per_sm_bytes: int
    shared_per_block_bytes: int
    shared_reserved_per_block_bytes: int
    registers_per_sm: int
    registers_per_thread_max: int
    register_allocation_unit: int
    threads_per_block_max: int
    threads_per_sm_max: int
    blocks_per_sm_max: int
    cluster_size_max: int
    named_barriers_max: int
    tensor_memory_bytes_per_sm: int
    memory_gb: float
    hbm_bandwidth_tbps: float  # datasheet
    hbm_reachable_tbps: float  # measured (or estimated) reachable read+write bandwidth
    l2_bytes: int
    l2_bandwidth_tbps: float
    shared_bandwidth_bytes_per_clock: int  # per SM
    launch_overhead_us: float
    # Dense peak rates per instruction family and dtype, in tera-ops per second
    # ("wgmma_bf16", "fp32_fma", "sfu_ex2"); an FMA counts two flops.
    peak_tera_per_s: types.MappingProxyType = dataclasses.field(hash=False)
    # Latencies in SM cycles ("global", "l2", "shared", "mbarrier", "tma_issue", ...).
    latency_cycles: types.MappingProxyType = dataclasses.field(hash=False)
    # cuBLAS bf16 GEMM at 8192^3 measured on this device, (low, high) TFLOP/s; None if unmeasured.
    measured_gemm_bf16_tflops: tuple = None
    # Where each figure comes from: field name (tables: "peak_tera_per_s.wgmma_bf16") -> note.
    sources: types.MappingProxyType = dataclasses.field(default=None, hash=False, compare=False)

    @property
    def key(self):
        """"sm_90a/H200": how reports name the device."""
        return "%s/%s" % (self.target, self.name)

    @property
    def clock_hz(self):
        return self.sm_clock_ghz * 1e9

    @property
    def hbm_reachable_bytes_per_s(self):
        return self.hbm_reachable_tbps * 1e12

    @property
    def l2_bytes_per_s(self):
        return self.l2_bandwidth_tbps * 1e12

    @property
    def shared_bytes_per_s(self):
        """Shared-memory bandwidth of the whole device (all SMs)."""
        return self.shared_bandwidth_bytes_per_clock * self.clock_hz * self.sms

    def peak_per_s(self, rate):
        """Operations per second of a peak-rate entry; None when the device has no such entry."""
        tera = self.peak_tera_per_s.get(rate)
        return None if tera is None else tera * 1e12

    def latency_s(self, what):
        """A latency in seconds; 0 for latencies the device does not list (features it lacks)."""
        return self.latency_cycles.get(what, 0) / self.clock_hz

    @property
    def limits(self):
        return Limits(**{f.name: getattr(self, f.name) for f in dataclasses.fields(Limits)})


@dataclasses.dataclass(frozen=True)
class Setmaxnreg:
    """The budgets setmaxnreg takes: multiples of `step` in [minimum, maximum]."""

    minimum: int
    maximum: int
    step: int

    def legal(self, value):
        return value % self.step == 0 and self.minimum <= value <= self.maximum


@dataclasses.dataclass(frozen=True)
class TargetFacts:
    """One SM target as the data file describes it (compiler.targets builds its Target from this)."""

    name: str
    arch: str
    compute_capability: tuple
    features: frozenset
    setmaxnreg: Setmaxnreg  # None where the target has no setmaxnreg
    role_register_overhead: int  # registers a role needs beyond its fragments
    sources: types.MappingProxyType = dataclasses.field(hash=False, compare=False)


class _DataError(ValueError):
    """targets.json is malformed (a missing, unknown or unsourced figure)."""


def _figure(entry, where):
    if not isinstance(entry, dict) or set(entry) != {"value", "source"} or not entry["source"]:
        raise _DataError("%s: expected {\"value\": ..., \"source\": \"...\"}" % where)
    return entry["value"], entry["source"]


def _merged(devices, name, seen=()):
    """A device's raw entry with its base chain's figures filled in."""
    raw = dict(devices[name])
    base = raw.pop("base", None)
    if base is None:
        return raw
    if base not in devices or base in seen:
        raise _DataError("device %s: base %r is not another device of its target" % (name, base))
    merged = _merged(devices, base, seen + (name,))
    for table in _TABLES:
        if table in raw:
            merged[table] = {**merged.get(table, {}), **raw.pop(table)}
    merged.update(raw)
    return merged


def _device(target, name, raw):
    where = "%s/%s" % (target, name)
    unknown = set(raw) - set(_SCALARS) - set(_TABLES) - set(_OPTIONAL)
    missing = (set(_SCALARS) | set(_TABLES)) - set(raw)
    if unknown or missing:
        raise _DataError("%s: unknown figures %s, missing figures %s" % (where, sorted(unknown), sorted(missing)))
    fields, sources = {"target": target, "name": name}, {}
    for key, kind in _SCALARS.items():
        value, sources[key] = _figure(raw[key], "%s.%s" % (where, key))
        fields[key] = kind(value)
    for table in _TABLES:
        values = {}
        for key, entry in raw[table].items():
            value, sources["%s.%s" % (table, key)] = _figure(entry, "%s.%s.%s" % (where, table, key))
            values[key] = float(value)
        fields[table] = types.MappingProxyType(values)
    if "measured_gemm_bf16_tflops" in raw:
        value, sources["measured_gemm_bf16_tflops"] = _figure(raw["measured_gemm_bf16_tflops"], where)
        fields["measured_gemm_bf16_tflops"] = tuple(float(v) for v in value)
    return Device(sources=types.MappingProxyType(sources), **fields)


_TARGET_FIELDS = {"arch", "compute_capability", "features", "role_register_overhead", "default", "devices"}
_TARGET_OPTIONAL = {"setmaxnreg"}


def _target_facts(name, entry, features):
    unknown = set(entry) - _TARGET_FIELDS - _TARGET_OPTIONAL
    missing = _TARGET_FIELDS - set(entry)
    if unknown or missing:
        raise _DataError("target %s: unknown fields %s, missing fields %s" % (name, sorted(unknown), sorted(missing)))
    undescribed = set(entry["features"]) - set(features)
    if undescribed:
        raise _DataError("target %s: features %s are not described under `features`" % (name, sorted(undescribed)))
    sources = {}
    cc, sources["compute_capability"] = _figure(entry["compute_capability"], name + ".compute_capability")
    overhead, sources["role_register_overhead"] = _figure(entry["role_register_overhead"], name + ".role_register_overhead")
    setmaxnreg = None
    if "setmaxnreg" in entry:
        value, sources["setmaxnreg"] = _figure(entry["setmaxnreg"], name + ".setmaxnreg")
        setmaxnreg = Setmaxnreg(int(value["min"]), int(value["max"]), int(value["step"]))
    if (setmaxnreg is None) != ("setmaxnreg" not in entry["features"]):
        raise _DataError("target %s: setmaxnreg's budgets are given exactly when it has the feature" % name)
    return TargetFacts(name, str(entry["arch"]), tuple(int(v) for v in cc), frozenset(entry["features"]), setmaxnreg,
                       int(overhead), types.MappingProxyType(sources))


@dataclasses.dataclass(frozen=True)
class Database:
    """All targets: their facts, their devices (target name -> device name -> Device) and each one's
    default device, and the instruction families (feature name -> description)."""

    targets: types.MappingProxyType
    devices: types.MappingProxyType
    defaults: types.MappingProxyType
    features: types.MappingProxyType

    def device_for(self, target_name, device=None):
        if target_name not in self.devices:
            raise ValueError(
                "unknown target %r: the target database has %s" % (target_name, ", ".join(sorted(self.devices)))
            )
        known = self.devices[target_name]
        name = self.defaults[target_name] if device is None else device
        if name not in known:
            raise ValueError(
                "unknown device %r for target %s: known devices are %s"
                % (name, target_name, ", ".join(sorted(known)))
            )
        return known[name]


def parse(data):
    """A Database from the parsed JSON of a targets file; ValueError naming the bad figure."""
    features = {name: _figure(entry, "features." + name) for name, entry in data["features"].items()}
    facts, devices, defaults = {}, {}, {}
    for target, entry in data["targets"].items():
        facts[target] = _target_facts(target, entry, features)
        raw_devices = entry["devices"]
        devices[target] = types.MappingProxyType(
            {name: _device(target, name, _merged(raw_devices, name)) for name in raw_devices}
        )
        if entry.get("default") not in raw_devices:
            raise _DataError("target %s: default %r is not one of its devices" % (target, entry.get("default")))
        defaults[target] = entry["default"]
    return Database(types.MappingProxyType(facts), types.MappingProxyType(devices), types.MappingProxyType(defaults),
                    types.MappingProxyType({name: text for name, (text, _) in features.items()}))


@functools.lru_cache(maxsize=None)
def load(path=TARGETS_JSON):
    """The Database in a targets file (cached per path)."""
    with open(path) as f:
        return parse(json.load(f))


def target_names():
    """The SM targets the database covers."""
    return sorted(load().devices)


def target_facts(target_name):
    """The TargetFacts of `target_name`; ValueError listing the known targets otherwise."""
    db = load()
    if target_name not in db.targets:
        raise ValueError("unknown target %r: the target database has %s" % (target_name, ", ".join(sorted(db.targets))))
    return db.targets[target_name]


def device_names(target_name):
    """The devices of one target; ValueError for an unknown target."""
    load().device_for(target_name)  # validates the name
    return sorted(load().devices[target_name])


def device_for(target_name, device=None):
    """The Device called `device` of `target_name` (its default when None).

    ValueError listing the valid targets or devices when either is unknown.
    """
    return load().device_for(target_name, device)


def limits(target_name, device=None):
    """The resource limits of a target's device (the default device when None)."""
    return device_for(target_name, device).limits

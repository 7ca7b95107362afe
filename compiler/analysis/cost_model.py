"""The cost model: a kernel, its shapes and a device -> features -> a CostReport.

`measure` gathers everything calibration-free: the shape binding, per-block
resources and occupancy, the launch geometry, work counts and the pipeline
features (roofline.FEATURES). `report` applies calibration constants through the
pipeline formula and fills an analysis_pb2.CostReport with the prediction, one
StageCost per stage used (with how its figure was derived) and the bottleneck.
"""

import collections
import math

from cake.compiler.v1 import analysis_pb2
from cake.ir.v1 import ir_pb2

from compiler import targets
from compiler.analysis import counts, occupancy, roofline, shape_binding, tiles
from compiler.analysis.errors import AnalysisError, as_float, evaluate
from compiler.ir import enums
from compiler.targets import database

# CUDA's grid limits per dimension (x, y, z).
GRID_LIMITS = ((1 << 31) - 1, 65535, 65535)
INT64_MAX = (1 << 63) - 1

Measured = collections.namedtuple(
    "Measured",
    "device shapes threads shared_bytes registers occupancy blocks launched waves totals traffic features",
)


def _target(kernel):
    known = {t: enums.short_name(ir_pb2.Target.DESCRIPTOR, t) for t in ir_pb2.Target.values()}
    name = known.get(kernel.target, "unspecified")
    if name not in targets.TARGETS:
        raise AnalysisError("kernel.target: %s; set one of %s" % (name, ", ".join(targets.TARGETS)))
    return targets.TARGETS[name]


def _device(target, device):
    """The Device for `device`: None (the target's default), a name, or "target/name"."""
    if device is not None and "/" in device:
        prefix, device = device.split("/", 1)
        if prefix != target.name:
            raise AnalysisError("device %s/%s is not a %s device" % (prefix, device, target.name))
    try:
        return database.device_for(target.name, device)
    except ValueError as e:
        raise AnalysisError(str(e)) from None


def _grid(kernel, env):
    grid = kernel.launch.grid
    if not 1 <= len(grid) <= 3:
        raise AnalysisError("kernel.launch.grid: %d dims; a non-persistent launch needs 1 to 3" % len(grid))
    dims = []
    for i, (e, limit) in enumerate(zip(grid, GRID_LIMITS)):
        value = evaluate(e, env, "kernel.launch.grid[%d]" % i)
        if not 1 <= value <= limit:
            raise AnalysisError("kernel.launch.grid[%d]: %d blocks; CUDA allows 1 to %d" % (i, value, limit))
        dims.append(value)
    return dims


def _ring_depth(kernel):
    depths = [p.stages for p in kernel.pipelines] + [
        r.stages for r in kernel.regions if r.space == ir_pb2.MEMORY_SPACE_SHARED
    ]
    return max([1] + depths)


def _tensor_bytes(kernel, env, name):
    """Bytes of the tensor param `name` (0 for an unknown param)."""
    for i, p in enumerate(kernel.params):
        if p.name == name:
            n = tiles.dtype_bytes(p.dtype)
            for j, e in enumerate(p.shape):
                n *= max(0, evaluate(e, env, "kernel.params[%d].shape[%d]" % (i, j)))
            return as_float(n, "kernel.params[%d].shape" % i)
    return 0.0


def _specialized(kernel):
    kinds = {r.kind for r in kernel.roles}
    return ir_pb2.ROLE_KIND_PRODUCER in kinds and ir_pb2.ROLE_KIND_CONSUMER in kinds


def _peak(device, family, dtype):
    rate = device.peak_per_s("%s_%s" % (family, dtype)) or device.peak_per_s(family + "_bf16")
    if rate is None:
        raise AnalysisError("%s has no %s instructions" % (device.key, family))
    return rate


def measure(kernel, shapes=None, device=None):
    """Everything about `kernel` at `shapes` on `device` that does not depend on calibration."""
    target = _target(kernel)
    dev = _device(target, device)
    env = shape_binding.bind(kernel, shapes)
    threads = occupancy.threads_per_block(kernel)
    if threads == 0:
        raise AnalysisError("kernel.roles: no threads; declare roles with warps or warpgroups")
    shared = occupancy.shared_bytes_per_block(kernel)
    problem = occupancy.register_problem(kernel, dev, target.has("setmaxnreg"))
    if problem:
        raise AnalysisError("kernel does not fit on one SM of %s: %s" % (dev.key, problem))
    registers = occupancy.registers_per_thread(kernel, dev, target.has("setmaxnreg"))
    occ = occupancy.occupancy(dev, shared, registers, threads)
    if occ.blocks_per_sm == 0:
        raise AnalysisError(
            "kernel does not fit on one SM of %s: limited by %s (%d B shared, %d registers x %d threads per block)"
            % (dev.key, occ.limiter, shared, registers, threads)
        )
    slots = dev.sms * occ.blocks_per_sm
    per_sm = max(1, kernel.launch.min_blocks_per_sm)
    if per_sm > occ.blocks_per_sm:  # __launch_bounds__ promises per_sm resident blocks (the verifier's CAKE-RES-009)
        raise AnalysisError(
            "kernel.launch.min_blocks_per_sm: %d blocks per SM, but %s allows %d"
            % (per_sm, occ.limiter, occ.blocks_per_sm)
        )
    if kernel.launch.persistent:
        grid = [dev.sms * per_sm]
    else:
        grid = _grid(kernel, env)
    launched = math.prod(grid)
    per_block, tiles = counts.count(kernel, {**env, **counts.builtins(grid)}, launched)
    if kernel.launch.persistent:
        blocks = tiles or launched
        rounds = blocks / launched
        waves, fill_waves = rounds, 1
    else:
        blocks = launched
        waves = rounds = blocks / slots
        fill_waves = math.ceil(waves)
    if blocks > INT64_MAX:
        raise AnalysisError("kernel walks %d work tiles; more than a 64-bit count" % blocks)
    totals = {key: value * launched for key, value in per_block.items()}
    if not all(math.isfinite(v) for v in totals.values()):
        raise AnalysisError("kernel's work overflows any count: check tile shapes and loop bounds")
    traffic = _traffic(kernel, env, totals)
    features = _features(kernel, dev, totals, traffic, rounds, fill_waves)
    return Measured(dev, env, threads, shared, registers, occ, blocks, launched, waves, totals, traffic, features)


def _traffic(kernel, env, totals):
    """Global bytes: requested reads and writes, and the unique part (at most each tensor's size)."""
    reads = {k[5:]: v for k, v in totals.items() if k.startswith("read:")}
    writes = {k[6:]: v for k, v in totals.items() if k.startswith("write:")}
    return {
        "read": sum(reads.values()),
        "write": sum(writes.values()),
        "unique_read": sum(min(v, _tensor_bytes(kernel, env, p)) for p, v in reads.items()),
        "unique_write": sum(min(v, _tensor_bytes(kernel, env, p)) for p, v in writes.items()),
    }


def _features(kernel, dev, totals, traffic, rounds, fill_waves):
    """roofline.FEATURES of the counted work on `dev`."""
    reach, sm_cycles = dev.hbm_reachable_bytes_per_s, dev.sms * dev.clock_hz
    f = {
        "launch_s": dev.launch_overhead_us * 1e-6,
        "latency_s": dev.latency_s("global") + (dev.latency_s("tma_issue") if totals.get("tma_loads") else 0.0),
        "cycle_s": 1.0 / dev.clock_hz,
        "fill_stages": float(_ring_depth(kernel)),
        "fill_waves": float(fill_waves),
        "quant": math.ceil(rounds) / rounds if rounds > 0 else 1.0,
        "dram_read_unique_s": traffic["unique_read"] / reach,
        "dram_read_reuse_s": (traffic["read"] - traffic["unique_read"]) / reach,
        "dram_write_s": traffic["unique_write"] / reach,
        "l2_s": (traffic["read"] + traffic["write"]) / dev.l2_bytes_per_s,
        "shared_s": totals.get("shared", 0.0) / dev.shared_bytes_per_s,
        "fp32_s": totals.get("fp32", 0.0) / dev.peak_per_s("fp32_fma"),
        "sfu_s": totals.get("sfu", 0.0) / dev.peak_per_s("sfu_ex2"),
        "epilogue_s": totals.get("epilogue", 0.0) / sm_cycles,
        "atomic_s": totals.get("atomic", 0.0) / sm_cycles,
        "atomic_aggregated_s": totals.get("atomic_aggregated", 0.0) / sm_cycles,
        "specialized": 1.0 if _specialized(kernel) else 0.0,
    }
    for key, flops in totals.items():
        if key.startswith("mma:") and flops:
            _, family, dtype = key.split(":")
            f[family + "_s"] = f.get(family + "_s", 0.0) + flops / _peak(dev, family, dtype)
    return f


def _flops(totals):
    by_family = collections.OrderedDict()
    for family in roofline.MMA_FAMILIES:
        by_family[family] = sum(v for k, v in totals.items() if k.startswith("mma:%s:" % family))
    by_family["fp32"] = totals.get("fp32", 0.0)
    by_family["sfu"] = totals.get("sfu", 0.0)
    return [(k, v) for k, v in by_family.items() if v]


def _gb(n):
    return "%.3g GB" % (n / 1e9)


def _details(m, c):
    """How each stage's figure was derived, in words."""
    dev, f, t = m.device, m.features, m.totals
    reach = dev.hbm_reachable_tbps
    quant = "" if f["quant"] <= 1.0 else ", x%.3f wave quantization" % f["quant"]
    g = m.traffic
    read, reuse, write = g["unique_read"], g["read"] - g["unique_read"], g["unique_write"]
    l2_bytes = g["read"] + g["write"]
    out = {
        "launch": "launch overhead %.1f us x launch_scale %.2f" % (dev.launch_overhead_us, c["launch_scale"]),
        "fill": "%d fill(s) x (global latency %d cycles x %.2f + %d stages x %.0f cycles) at %.3g GHz"
        % (
            f["fill_waves"],
            round(f["latency_s"] * dev.clock_hz),
            c["fill_latency_scale"],
            f["fill_stages"],
            c["fill_cycles_per_stage"],
            dev.sm_clock_ghz,
        ),
        "dram": "reads %s unique + %.3g x %s re-read (L2 misses) + writes %s, at %.3g TB/s x eff %.2f"
        % (_gb(read), c["l2_miss_fraction"], _gb(reuse), _gb(write), reach, c["eff_dram"]),
        "l2": "%s requested at %.3g TB/s x eff %.2f" % (_gb(l2_bytes), dev.l2_bandwidth_tbps, c["eff_l2"]),
        "shared": "%s at %d B/clk/SM x %d SMs x eff %.2f%s"
        % (_gb(t.get("shared", 0.0)), dev.shared_bandwidth_bytes_per_clock, dev.sms, c["eff_shared"], quant),
        "fp32": "%.4g flop at %.3g TFLOP/s x eff %.2f%s"
        % (t.get("fp32", 0.0), dev.peak_tera_per_s["fp32_fma"], c["eff_fp32"], quant),
        "sfu": "%.4g ops at %.3g Tops/s x eff %.2f%s" % (t.get("sfu", 0.0), dev.peak_tera_per_s["sfu_ex2"], c["eff_sfu"], quant),
        "epilogue": "%.4g elements stored by threads x %.3g cycles per element per SM%s"
        % (t.get("epilogue", 0.0), c["epilogue_cycles_per_element"], quant),
        "atomic": "%.4g atomics + %.4g warp-aggregated / %.3g, x %.3g cycles per element per SM"
        % (t.get("atomic", 0.0), t.get("atomic_aggregated", 0.0), c["warp_aggregation_factor"], c["atomic_cycles_per_element"]),
    }
    for family in roofline.MMA_FAMILIES:
        parts = [
            "%.4g flop %s at %.4g TFLOP/s" % (v, k.split(":")[2], _peak(dev, family, k.split(":")[2]) / 1e12)
            for k, v in sorted(t.items())
            if k.startswith("mma:%s:" % family) and v
        ]
        out[family] = "%s, x eff %.2f%s" % ("; ".join(parts), c["eff_" + family], quant)
    return out


def report(m, calibration):
    """The CostReport of a Measured kernel under a Calibration."""
    c = calibration.constants
    prediction = roofline.predict(m.features, c)
    if not math.isfinite(prediction.seconds):
        raise AnalysisError("the predicted time overflows: check tile shapes and loop bounds")
    details = _details(m, c)
    r = analysis_pb2.CostReport(
        device=m.device.key,
        shared_bytes_per_block=m.shared_bytes,
        registers_per_thread=m.registers,
        threads_per_block=m.threads,
        blocks_per_sm=m.occupancy.blocks_per_sm,
        occupancy_limiter=m.occupancy.limiter,
        blocks=int(m.blocks),
        waves=m.waves,
        predicted_seconds=prediction.seconds,
        calibration=calibration.version,
    )
    r.shapes.update(m.shapes)
    for name, value in _flops(m.totals):
        r.flops.add(name=name, value=value)
    g = m.traffic
    levels = [
        ("global_read", g["read"]),
        ("global_write", g["write"]),
        ("global_unique", g["unique_read"] + g["unique_write"]),
        ("dram", g["unique_read"] + c["l2_miss_fraction"] * (g["read"] - g["unique_read"]) + g["unique_write"]),
        ("l2", g["read"] + g["write"]),
        ("shared", m.totals.get("shared", 0.0)),
        ("tensor_memory", m.totals.get("tensor_memory", 0.0)),
    ]
    for name, value in levels:
        r.bytes.add(name=name, value=value)
    used = [s for s in prediction.stages if s.seconds > 0 or s.name == "launch"]
    for s in used:
        r.stages.add(name=s.name, seconds=s.seconds, utilization=s.peak_seconds / prediction.seconds, detail=details[s.name])
    r.bottleneck = roofline.bottleneck(used)
    return r

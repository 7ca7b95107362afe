"""The roofline-plus-pipeline formula: a kernel's features and the calibration constants -> time.

Features are calibration-free quantities of one kernel on one device, mostly
"seconds at the unit's peak rate" (cost_model.py computes them from the IR and the
target database); constants are calibration.json's. Keeping the formula a pure
function of both lets calibration refit the constants from (features, measured
time) pairs without the IR.

    stage seconds = feature seconds / efficiency (x wave quantization for SM-local units)
    memory  = max(dram, l2, shared)                       separate units work concurrently
    compute = overlap(sum of MMA families, fp32 + sfu, overlap_math)
    body    = overlap(memory, compute, overlap_specialized or overlap_unspecialized)
    total   = launch + fill + overlap(body, epilogue + atomic, overlap_epilogue)

where overlap(a, b, f) = max(a, b) + (1 - f) * min(a, b): f = 1 hides the shorter
stage entirely, f = 0 serializes the two.
"""

import collections

# Feature names, all floats (missing ones count as 0).
FEATURES = {
    "launch_s": "the device's launch overhead, seconds",
    "latency_s": "one DRAM round trip (global latency + TMA issue), seconds",
    "cycle_s": "one SM cycle, seconds",
    "fill_stages": "ring depth: stages filled before the first MMA",
    "fill_waves": "times an SM slot fills a ring (waves; 1 for persistent kernels)",
    "quant": "wave quantization: ceil(waves) / waves (>= 1), applied to SM-local units",
    "dram_read_unique_s": "bytes of each read tensor once, at reachable DRAM bandwidth",
    "dram_read_reuse_s": "bytes read beyond each tensor's size (L2 reuse candidates), at DRAM bandwidth",
    "dram_write_s": "bytes written (stores, atomics), at DRAM bandwidth",
    "l2_s": "all requested global bytes, at L2 bandwidth",
    "shared_s": "shared-memory traffic (MMA operands, shared copies), at the device's shared bandwidth",
    "mma_sync_s": "mma.sync flops at the family's dense peak",
    "wgmma_s": "wgmma flops at the family's dense peak",
    "tcgen05_s": "tcgen05 flops at the family's dense peak",
    "fp32_s": "CUDA-core flops at the FP32 FMA peak",
    "sfu_s": "SFU operations at the SFU peak",
    "epilogue_s": "elements written from registers, at one element per SM cycle",
    "atomic_s": "atomic elements, at one per SM cycle",
    "atomic_aggregated_s": "warp-aggregated atomic elements, at one per SM cycle",
    "specialized": "1 when producer and consumer roles overlap loads with math (warp specialization)",
}

MMA_FAMILIES = ("mma_sync", "wgmma", "tcgen05")

# Which stages run on each SM (wave quantization applies) and what kind of bound each is.
KIND = {
    "launch": "latency",
    "fill": "latency",
    "dram": "memory",
    "l2": "memory",
    "shared": "memory",
    "mma_sync": "compute",
    "wgmma": "compute",
    "tcgen05": "compute",
    "fp32": "compute",
    "sfu": "compute",
    "epilogue": "epilogue",
    "atomic": "memory",
}

Stage = collections.namedtuple("Stage", "name seconds peak_seconds")
Prediction = collections.namedtuple("Prediction", "seconds stages")


def overlap(a, b, f):
    """Time of two stages of which a fraction f of the shorter one hides under the longer."""
    return max(a, b) + (1.0 - f) * min(a, b)


def predict(features, constants):
    """Prediction(seconds, stages) for one kernel; every stage is listed (zero when unused).

    A stage's `seconds` is its time alone (after efficiency and quantization);
    `peak_seconds` its time at the unit's full rate, for utilization.
    """
    f = collections.defaultdict(float, features)
    c = constants
    quant = max(1.0, f["quant"])
    stages = [
        Stage("launch", f["launch_s"] * c["launch_scale"], f["launch_s"] * c["launch_scale"]),
    ]
    fill = f["fill_waves"] * (
        f["latency_s"] * c["fill_latency_scale"] + f["fill_stages"] * c["fill_cycles_per_stage"] * f["cycle_s"]
    )
    stages.append(Stage("fill", fill, fill))
    dram_peak = f["dram_read_unique_s"] + f["dram_read_reuse_s"] * c["l2_miss_fraction"] + f["dram_write_s"]
    stages.append(Stage("dram", dram_peak / c["eff_dram"], dram_peak))
    stages.append(Stage("l2", f["l2_s"] / c["eff_l2"], f["l2_s"]))
    stages.append(Stage("shared", f["shared_s"] * quant / c["eff_shared"], f["shared_s"]))
    for family in MMA_FAMILIES:
        peak = f[family + "_s"]
        stages.append(Stage(family, peak * quant / c["eff_" + family], peak))
    stages.append(Stage("fp32", f["fp32_s"] * quant / c["eff_fp32"], f["fp32_s"]))
    stages.append(Stage("sfu", f["sfu_s"] * quant / c["eff_sfu"], f["sfu_s"]))
    epilogue = f["epilogue_s"] * quant * c["epilogue_cycles_per_element"]
    stages.append(Stage("epilogue", epilogue, epilogue))
    atomic = (f["atomic_s"] + f["atomic_aggregated_s"] / c["warp_aggregation_factor"]) * c["atomic_cycles_per_element"]
    stages.append(Stage("atomic", atomic, atomic))

    s = {st.name: st.seconds for st in stages}
    memory = max(s["dram"], s["l2"], s["shared"])
    compute = overlap(sum(s[fam] for fam in MMA_FAMILIES), s["fp32"] + s["sfu"], c["overlap_math"])
    body_overlap = c["overlap_specialized"] if f["specialized"] else c["overlap_unspecialized"]
    body = overlap(memory, compute, body_overlap)
    total = s["launch"] + s["fill"] + overlap(body, s["epilogue"] + s["atomic"], c["overlap_epilogue"])
    return Prediction(total, stages)


def bottleneck(stages):
    """The stage taking the longest alone: the one bounding the prediction."""
    return max(stages, key=lambda st: st.seconds).name

"""A learned ranker of candidates: gradient-boosted trees over the compiler's features, trained on measured times.

The analytic cost model (the compiler's, through the port) predicts one time per
candidate from pipeline terms; many structurally different candidates get the same
prediction (on the H200 KMeans run, 130 measured candidates had 36 distinct
predictions and a Spearman correlation of 0.34 with the measured times). The ranker
learns, from candidates measured on a device, how the features a candidate has map to
its time relative to the best of its task, so it can order candidates the analytic
model cannot tell apart. It keeps the analytic prediction as one of its inputs and
the analytic model stays the fallback: a task with fewer than MIN_ROWS measured rows
gets no ranker.

A row's features (`summarize`) are the calibration features of the analysis (names
prefixed `cost.`, as the AnalyzeResponse gives them), the log of the analytic
prediction, and a fixed-width summary of the verifier's IR features (prefixed `ir.`):
the kernel's numeric facts, per role kind its count, warps and register budget, per
op kind and MMA kind its count, over regions their ring depth, bytes and swizzle, and
how many of the MMAs' shared operand tiles are under-swizzled: a swizzle span narrower
than the widest that tiles the row (compiler.ir.dtypes.widest_swizzle), so the row is
split into narrower panels, each its own TMA box and descriptor panel. Summed or maxed
over all regions, the swizzle of one operand hides behind the other's: on the H200 GEMM
run, candidates whose A tile went from 128b to 64b measured about 20% slower with every
other summarized feature equal (benchmarks/datasets/README.md).
Trees are LightGBM's (a regression on log(time / task's best time)); `spearman` is the
rank correlation every report quotes.
"""

import collections
import json
import math

from compiler.ir.dtypes import SWIZZLE_SPAN, widest_swizzle

MIN_ROWS = 12
LOG_FLOOR = 1e-12
PARAMS = {  # small trees on small data; one thread and a fixed seed, so a fit is reproducible
    "objective": "regression", "learning_rate": 0.08, "num_leaves": 8, "min_data_in_leaf": 4,
    "feature_fraction": 0.9, "bagging_fraction": 0.9, "bagging_freq": 1, "lambda_l2": 1.0,
    "num_threads": 1, "seed": 7, "deterministic": True, "verbose": -1,
}
ROUNDS = 300


def summarize(calibration_features, predicted_s, ir_features):
    """One row's features: {name: float} from the analysis' calibration features, its prediction, and the
    verifier's IR features [(level, path, {feature: value})]."""
    if not predicted_s or predicted_s <= 0:
        raise ValueError("predicted_s must be a positive time in seconds, got %r" % (predicted_s,))
    out = {"cost.%s" % k: float(v) for k, v in calibration_features.items()}
    out["cost.log_predicted_s"] = math.log(predicted_s)
    counts = collections.Counter()
    peaks = collections.defaultdict(float)
    operands = {r for level, _, feats in ir_features if level == "op" and feats.get("op.mma_kind")
                for r in feats.get("op.regions", ())}
    for level, _, feats in ir_features:
        if level == "kernel":
            for k, v in feats.items():
                if isinstance(v, (bool, int, float)):
                    out["ir.%s" % k] = float(v)
        elif level == "role":
            kind = feats.get("role.kind", "")
            counts["ir.roles.%s" % kind] += 1
            counts["ir.role_warps.%s" % kind] += feats.get("role.warps", 0)
            peaks["ir.role_registers_max.%s" % kind] = max(peaks["ir.role_registers_max.%s" % kind], feats.get("role.registers", 0))
        elif level == "region":
            space = feats.get("region.space", "")
            counts["ir.regions.%s" % space] += 1
            counts["ir.region_bytes.%s" % space] += feats.get("region.bytes", 0)
            peaks["ir.region_stages_max.%s" % space] = max(peaks["ir.region_stages_max.%s" % space], feats.get("region.stages", 1))
            peaks["ir.swizzle_bytes_max.%s" % space] = max(peaks["ir.swizzle_bytes_max.%s" % space], feats.get("region.swizzle_bytes", 0))
            counts["ir.rings"] += bool(feats.get("region.ring"))
            if space == "shared" and feats.get("region.name") in operands:
                counts["ir.mma_operands_underswizzled"] += _underswizzled(feats)
        elif level == "op":
            counts["ir.ops.%s" % feats.get("op.kind", "")] += 1
            if feats.get("op.mma_kind"):
                counts["ir.mma.%s" % feats["op.mma_kind"]] += 1
            counts["ir.ops_in_loops"] += bool(feats.get("op.in_loop"))
            peaks["ir.op_depth_max"] = max(peaks["ir.op_depth_max"], feats.get("op.depth", 0))
            counts["ir.box_bytes"] += feats.get("op.box_bytes", 0)
        elif level == "barrier":
            counts["ir.barriers.%s" % feats.get("barrier.kind", "")] += feats.get("barrier.count", 1)
    out.update({k: float(v) for k, v in counts.items()})
    out.update({k: float(v) for k, v in peaks.items()})
    return out


def _underswizzled(region):
    """A shared tile whose swizzle span is narrower than the widest that divides its row."""
    row = region.get("region.inner_bytes", 0)
    return bool(row) and region.get("region.swizzle_bytes", 0) < SWIZZLE_SPAN[widest_swizzle(row)]


def spearman(a, b):
    """Spearman's rank correlation of two equal-length sequences (ties get their average rank); None below 3."""
    if len(a) != len(b):
        raise ValueError("spearman: %d values against %d" % (len(a), len(b)))
    if len(a) < 3:
        return None
    ra, rb = _ranks(a), _ranks(b)
    ma, mb = sum(ra) / len(ra), sum(rb) / len(rb)
    cov = sum((x - ma) * (y - mb) for x, y in zip(ra, rb))
    va = math.sqrt(sum((x - ma) ** 2 for x in ra))
    vb = math.sqrt(sum((y - mb) ** 2 for y in rb))
    return cov / (va * vb) if va and vb else 0.0


def _ranks(values):
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2.0
        i = j + 1
    return ranks


def missing():
    """Why no ranker can be trained here (its libraries do not import), or None. A measured run asks before it
    starts, so a machine without lightgbm (the lent GPU's image has none: carry its wheel) is refused at once."""
    try:
        import lightgbm  # noqa: F401
        import numpy  # noqa: F401
    except ImportError as e:
        return "the learned ranker needs lightgbm and numpy (%s)" % e
    return None


class Ranker:
    """Trees predicting log(time / the task's best measured time) from a row's features."""

    def __init__(self, names, booster):
        self.names = list(names)  # feature order
        self.booster = booster

    @classmethod
    def fit(cls, rows):
        """A ranker trained on dataset rows ({"task", "features", "measured_s"}); ValueError with too few."""
        import lightgbm
        import numpy

        if len(rows) < MIN_ROWS:
            raise ValueError("a ranker needs at least %d measured rows, got %d" % (MIN_ROWS, len(rows)))
        best = {}
        for r in rows:
            if not r["measured_s"] > 0:
                raise ValueError("row %s: measured_s must be a positive time, got %r" % (r.get("ir_hash"), r["measured_s"]))
            best[r["task"]] = min(best.get(r["task"], math.inf), r["measured_s"])
        names = sorted({k for r in rows for k in r["features"]})
        x = numpy.array([[r["features"].get(n, 0.0) for n in names] for r in rows], dtype=float)
        y = numpy.array([math.log(r["measured_s"] / best[r["task"]]) for r in rows])
        data = lightgbm.Dataset(x, y, feature_name=[n.replace(".", "_") for n in names], free_raw_data=False)
        return cls(names, lightgbm.train(PARAMS, data, num_boost_round=ROUNDS))

    def predict(self, features_list):
        """Predicted log time over the task's best, per features dict (lower ranks first)."""
        import numpy

        x = numpy.array([[f.get(n, 0.0) for n in self.names] for f in features_list], dtype=float)
        return [float(v) for v in self.booster.predict(x)]

    def to_text(self):
        return json.dumps({"names": self.names, "model": self.booster.model_to_string()})

    @classmethod
    def from_text(cls, text):
        import lightgbm

        data = json.loads(text)
        return cls(data["names"], lightgbm.Booster(model_str=data["model"]))

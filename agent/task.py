"""Tasks: what the agent optimizes (kernel contract, shapes, target, seed) and with what budget.

A task names its seed family and seed params, the fixed params the shapes imply (d,
dtype), the shapes it is timed at, the extra shapes the oracle checks (every
candidate of the family must accept them), the target and cost-model device, and
a budget. `TASKS` holds the presets; `kmeans-assign` (the default) is KMeans
assignment at a small shape, `kmeans-assign-paper` the paper's cell.
"""

import dataclasses
import json


@dataclasses.dataclass(frozen=True)
class Budget:
    """When the search stops: whichever limit comes first (0: no limit of that kind)."""

    evaluations: int = 300  # candidates given a fitness (predicted or measured)
    wall_s: float = 75.0  # seconds of search, not counting set-up and the report
    device_s: float = 0.0  # seconds of GPU work (compiles excluded), measured runs only
    stale_generations: int = 4  # stop after this many generations without a new candidate


@dataclasses.dataclass(frozen=True)
class Task:
    name: str
    family: str
    seed_params: dict
    fixed: dict  # builder params fixed by the task (feature width, dtype)
    shapes: dict  # shape symbols the kernel is timed and predicted at
    check_shapes: tuple  # further shapes the oracle checks (satisfying every family member's constraints)
    target: str = "sm_90a"
    device: str = "sm_90a/H200"  # the cost model's device
    budget: Budget = Budget()
    batch: int = 6  # children proposed per generation
    measure_top: int = 2  # of those, how many (best predicted) are compiled and measured on a GPU
    prune_margin: float = 0.25  # never measure a child predicted this much slower than the best measured one

    def to_json(self):
        return json.loads(json.dumps(dataclasses.asdict(self)))

    @classmethod
    def from_json(cls, data):
        data = dict(data)
        data["budget"] = Budget(**data["budget"])
        data["check_shapes"] = tuple(data["check_shapes"])
        return cls(**data)

    def with_budget(self, **changes):
        return dataclasses.replace(self, budget=dataclasses.replace(self.budget, **changes))


_KMEANS_CHECKS = ({"B": 2, "N": 3072, "K": 768, "D": 128}, {"B": 1, "N": 768, "K": 1536, "D": 128})

TASKS = {
    t.name: t
    for t in (
        Task(
            name="kmeans-assign",
            family="kmeans_assign_sm90a",
            seed_params={"block_k": 128, "stages": 3, "consumers": 2},
            fixed={"d": 128, "dtype": "bf16"},
            shapes={"B": 1, "N": 65536, "K": 1024, "D": 128},
            check_shapes=_KMEANS_CHECKS,
        ),
        Task(
            name="kmeans-assign-paper",
            family="kmeans_assign_sm90a",
            seed_params={"block_k": 128, "stages": 3, "consumers": 2},
            fixed={"d": 128, "dtype": "bf16"},
            shapes={"B": 32, "N": 65536, "K": 1024, "D": 128},
            check_shapes=_KMEANS_CHECKS,
            budget=Budget(evaluations=0, wall_s=0.0, device_s=1200.0, stale_generations=8),
        ),
    )
}
DEFAULT_TASK = "kmeans-assign"


def task(name):
    try:
        return TASKS[name]
    except KeyError:
        raise ValueError("unknown task %r (known: %s)" % (name, ", ".join(TASKS))) from None

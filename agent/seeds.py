"""Seed families: parameterized schedule builders the search starts from and moves within.

A family is a builder in kernels/ plus the values each of its parameters may take
(ordered, so a tactic can step up or down) and what the runtime needs to launch its
kernels (the measurement binding). The KMeans seeds are the issue's yardstick: the
search starts from the naive `assign_sm90a`; the hand-tuned `assign_sm90a_tuned` is a
family too, but no task seeds from it unless asked (--seed-family).
"""

import dataclasses
import importlib


@dataclasses.dataclass(frozen=True)
class Family:
    """A schedule builder and its parameter space."""

    name: str
    builder: str  # "package.module:function" taking the params as keyword arguments
    space: dict  # param -> ordered tuple of allowed values
    defaults: dict  # the seed's params (must lie in the space)
    binding: str  # "package.module:function": the measurement binding (agent/measure/bindings.py)
    contract: str  # "package.module:function": shapes -> runtime Contract (the oracle's and the timer's)
    doc: str = ""

    def build(self, params, fixed):
        """The Kernel for `params` (plus the task's `fixed` params such as d and dtype)."""
        module, _, attr = self.builder.partition(":")
        return getattr(importlib.import_module(module), attr)(**fixed, **params)

    def step(self, params, name, delta):
        """`params` with `name` moved `delta` places along its space; None at the edge or if unknown."""
        values = self.space.get(name)
        if values is None or params.get(name) not in values:
            return None
        i = values.index(params[name]) + delta
        if not 0 <= i < len(values):
            return None
        return {**params, name: values[i]}

    def analysis_shapes(self, shapes, params):
        """Shape symbols the cost model needs beyond the task's (the tuned family pads K to KP)."""
        if "block_k" in params and self.name.endswith("_tuned"):
            block = params["block_k"]
            return {**shapes, "KP": -(-shapes["K"] // block) * block}
        return dict(shapes)


FAMILIES = {
    f.name: f
    for f in (
        Family(
            name="kmeans_assign_sm90a",
            builder="kernels.kmeans.schedules:assign_sm90a",
            space={"block_k": (64, 128, 256), "stages": (2, 3, 4, 5, 6), "consumers": (1, 2, 3, 4)},
            defaults={"block_k": 128, "stages": 3, "consumers": 2},
            binding="agent.measure.bindings:kmeans_assign",
            contract="kernels.kmeans.contract:assign_contract",
            doc="the naive seed: 64 x consumers resident points per block, centroid tiles through a TMA ring",
        ),
        Family(
            name="kmeans_assign_sm90a_tuned",
            builder="kernels.kmeans.tuned:assign_sm90a_tuned",
            space={"block_k": (64, 128, 256), "stages": (2, 3, 4, 5, 6), "x_stages": (1, 2, 3),
                   "consumers": (1, 2, 3, 4)},
            defaults={"block_k": 128, "stages": 3, "x_stages": 2, "consumers": 4},
            binding="agent.measure.bindings:kmeans_assign",
            contract="kernels.kmeans.contract:assign_contract",
            doc="the hand-tuned persistent schedule (not a default seed: it is the answer, not a start)",
        ),
    )
}


def family(name):
    """The Family called `name`; ValueError listing the known ones."""
    try:
        return FAMILIES[name]
    except KeyError:
        raise ValueError("unknown seed family %r (known: %s)" % (name, ", ".join(FAMILIES))) from None

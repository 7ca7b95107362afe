"""The LLM author's population: a MAP-Elites archive of a run's candidates with their times, and its failures.

Each candidate with a fitness (measured on the GPU, or predicted by the cost model in a
run without one) falls into a niche by what shapes its schedule: its roles (kind and
warps each), its deepest shared-memory ring, its MMA kind and accumulator width, and
whether it is persistent. A niche keeps its fastest candidate; the elites are those, fastest
first, so the prompt shows the best kernel of each kind of schedule rather than ten
siblings of one. `rejected` gives the latest failures with the compiler's diagnostics, so
the author sees what did not work and why. Everything is read from the run's store when
asked: the store stays the one record, and a resumed run's population is the same.
"""

import dataclasses

from cake.ir.v1 import ir_pb2

from compiler.ir import enums, paths
from compiler.ir.text import parse_kernel



_MMA = ir_pb2.Mma.DESCRIPTOR


@dataclasses.dataclass(frozen=True)
class Elite:
    id: int
    fitness_s: float
    tactic: str
    author: str
    niche: tuple
    ir_text: str


@dataclasses.dataclass(frozen=True)
class Rejected:
    id: int
    tactic: str
    author: str
    status: str
    diagnostics: list  # dicts: severity, diag_id, path, message, fix_hint


def niche(kernel):
    """The schedule's descriptor: ((role kind, warps) per role, deepest shared ring, (MMA kind, accumulator
    columns) of its first MMA, persistent)."""
    roles = tuple((enums.short_name(ir_pb2.RoleKind.DESCRIPTOR, r.kind), r.warps or 4 * r.warpgroups)
                  for r in kernel.roles)
    rings = max((r.stages for r in kernel.regions if r.space == ir_pb2.MEMORY_SPACE_SHARED), default=0)
    regions = {r.name: r for r in kernel.regions}
    mma = next((node for _, node in paths.walk(kernel) if node.DESCRIPTOR is _MMA), None)
    shape = None
    if mma is not None:
        acc = regions.get(mma.acc.region)
        shape = (enums.short_name(ir_pb2.MmaKind.DESCRIPTOR, mma.kind), acc.shape[-1] if acc and acc.shape else 0)
    return roles, rings, shape, bool(kernel.launch.persistent)


class Population:
    """The elites and the latest failures of the run in `store`."""

    def __init__(self, store):
        self.store = store
        self._niches = {}  # candidate id -> niche: a candidate's IR never changes

    def _niche(self, row):
        n = self._niches.get(row["id"])
        if n is None:
            n = self._niches[row["id"]] = niche(parse_kernel(row["ir_text"]).kernel)
        return n

    def elites(self, limit):
        """The fastest candidate of each niche, fastest first, at most `limit`."""
        best = {}
        for row in self.store.ranked():  # fastest first: a niche's first row is its elite
            best.setdefault(self._niche(row), row)
        rows = sorted(best.values(), key=lambda r: (r["fitness_s"], r["id"]))[:limit]
        return [Elite(r["id"], r["fitness_s"], r["tactic"], r["author"], self._niche(r), r["ir_text"]) for r in rows]

    def rejected(self, limit, author=None):
        """The latest `limit` rejected candidates (of `author` when given) with their error diagnostics."""
        out = []
        for row in self.store.rejected(limit, author):
            errors = [d for d in self.store.diagnostics(row["id"]) if d["severity"] == "error"]
            out.append(Rejected(row["id"], row["tactic"], row["author"], row["status"], errors))
        return out

"""The KNN searches' schedule variants: named choices of layout, parameters and seeding, and what each admits.

A variant fixes what plan.py otherwise chooses from the budgets: the layout ("rows": queries on
the wgmma M side, `row_groups` x `interleave` consumer warpgroups on `block_n`-row database
tiles; "cols": database rows on M, up to 16 queries on N) and whether a seeding pass bounds each
query's k-th score first. The database split still comes from the planner's cost model at the
call's sizes, so a variant admits every shape whose lists and rings fit its budgets
(`plan` returns None otherwise). The dispatcher (kernels/knn/dispatch.py) picks one per shape
bucket from the tuning database, and `config=` forces one by name.
"""

import dataclasses

from kernels.knn import plan as planner

# (row groups, interleave classes, block_n) of the rows variants.
ROWS = ((2, 1, 128), (3, 1, 128), (3, 1, 64), (4, 1, 64), (2, 2, 64), (1, 4, 64), (1, 1, 64), (1, 2, 64), (2, 1, 64),
        (1, 3, 64), (4, 1, 128), (1, 1, 128), (1, 2, 128))


@dataclasses.dataclass(frozen=True)
class Variant:
    layout: str
    row_groups: int = 0
    interleave: int = 0
    block_n: int = 0
    seed: bool = False

    @property
    def name(self):
        base = "cols" if self.layout == "cols" else "rows_r%d_c%d_n%d" % (self.row_groups, self.interleave, self.block_n)
        return base + ("+seed" if self.seed else "+noseed")

    def plan(self, b, q, m, d, k, sms=planner.SMS):
        """The Plan of this variant for B problems of Q queries, M rows of D (padded) features, k; None if it does not fit."""
        if self.seed and not planner.seed_rows(m, k):
            return None
        if self.layout == "cols":
            if q > 16:
                return None
            try:
                return planner.plan(b, q, m, d, k, layout="cols", sms=sms, seeded=self.seed)
            except ValueError:
                return None
        if self.row_groups > 1 and q <= 64 * (self.row_groups - 1):
            return None  # a row group would score no query
        try:
            return planner.plan(b, q, m, d, k, layout="rows", sms=sms, seeded=self.seed,
                                rows=(self.row_groups, self.interleave, self.block_n))
        except ValueError:
            return None


def name_of(p, seeded):
    """The variant name of a Plan (plan.py) and its seeding choice (the name `Variant.name` would give it)."""
    base = "cols" if p.layout == "cols" else "rows_r%(row_groups)d_c%(interleave)d_n%(block_n)d" % p.kwargs
    return base + ("+seed" if seeded else "+noseed")


def of_plan(p, seeded):
    """The named Variant a Plan and seeding choice are, or None when the plan is none of them."""
    return BY_NAME.get(name_of(p, seeded))


ALL = tuple(Variant("rows", r, c, bn, seed) for r, c, bn in ROWS for seed in (False, True)) + (
    Variant("cols", seed=False), Variant("cols", seed=True))
BY_NAME = {v.name: v for v in ALL}


def admitted(b, q, m, d, k, sms=planner.SMS):
    """{variant: Plan} of the variants that fit a shape."""
    out = {}
    for v in ALL:
        p = v.plan(b, q, m, d, k, sms)
        if p is not None:
            out[v] = p
    return out


def named(config):
    """The Variant `config` names (a Variant or one of BY_NAME's names); ValueError otherwise."""
    if isinstance(config, Variant):
        return config
    v = BY_NAME.get(config)
    if v is None:
        raise ValueError("config must be a knn Variant or one of the variant names (e.g. %s), got %r"
                         % (ALL[0].name, config))
    return v

"""Coverage proof of the KNN dispatcher (no GPU): every bucket of the declared domain (domain.json), at its
corners, gets kernels whose IR contracts admit the problem (symbol ranges and constraints, as the runtime
checks them before a launch), or the torch path when k is past the register lists."""

import functools
import math

import pytest
import torch

from compiler.ir.expr import evaluate
from compiler.lower import lower
from kernels.knn import dispatch, schedules
from kernels.knn import plan as planner

DOMAIN = dispatch.DOMAIN


@functools.lru_cache(maxsize=None)
def _launch_md(builder, params):
    return lower(getattr(schedules, builder)(**dict(params))).launch


def _admits(builder, params, env):
    """Why the kernel's contract refuses env, or None."""
    md = _launch_md(builder, params)
    for s in md.symbols:
        v = env.get(s.name, s.value if s.HasField("value") else None)
        if v is None or not s.min <= v <= s.max:
            return "%s: %s = %s outside [%d, %d]" % (builder, s.name, v, s.min, s.max)
        env[s.name] = v
    for c in md.constraints:
        if not evaluate(c.expr, env):
            return "%s: %s (%s)" % (builder, c.doc, env)
    return None


def _check(b, q, m, d, k, metric="l2"):
    if k > planner.MAX_K:
        return dispatch.explain(b, q, m, d, k)["path"].startswith("torch")
    rank_d, _ = dispatch.rank_shape(d, torch.bfloat16)
    p, rows, _ = dispatch.choose(b, q, m, rank_d, k)
    # The kernels are those of the shape's buckets of the ladders (plan.TILE_WIDTHS, plan.LIST_KS); the merge
    # writes the first KO = k of its lists.
    assert p.k == planner.list_k(k) and p.kwargs["d"] == planner.tile_width(rank_d)
    score, merge = dispatch.score_builder(p, metric, False, "bf16", bool(rows)), dispatch.merge_builder(
        p.k, metric, torch.bfloat16, torch.int32, single=p.single)
    env = dict(B=b, Q=q, M=m, D=rank_d, S=p.splits, T=p.tiles, P=p.lists_padded, MP=-(-m // 4) * 4, KO=k)
    errors = [_admits(*score, dict(env)), _admits(*merge, dict(env))]
    fanned = planner.fanin_lists(p.lists_padded)
    if fanned:
        errors.append(_admits(*dispatch.fanin_builder(p.k, metric), dict(env, G=fanned)))
    if rows:
        sp = planner.plan(b, q, rows, rank_d, k)
        senv = dict(B=b, Q=q, M=rows, D=rank_d, S=sp.splits, T=sp.tiles, P=sp.lists_padded, MP=-(-rows // 4) * 4, KO=k)
        errors.append(_admits(*dispatch.score_builder(sp, metric, False, "bf16"), senv))
        errors.append(_admits(*dispatch.merge_builder(sp.k, metric, torch.bfloat16, torch.int32, rescore=False,
                                                      single=sp.single), dict(senv)))
    errors = [e for e in errors if e]
    assert not errors, ((b, q, m, d, k), errors)
    return True


def _bucket_points(name):
    """Per bucket of `name`: its low end, its high end and an odd value inside it."""
    out = []
    for i in range(len(DOMAIN.buckets[name])):
        low, high = DOMAIN.bucket_range(name, i)
        out.append(sorted({low, high, ((low + high) // 2) | 1 if high > low else low}))
    return out


def _shapes():
    dims = {n: _bucket_points(n) for n in ("B*Q", "M", "D", "k")}
    for bq in dims["B*Q"]:
        for mm in dims["M"]:
            for dd in dims["D"]:
                for kk in dims["k"]:
                    for corner in range(3):
                        pick = lambda pts: pts[min(corner, len(pts) - 1)]  # noqa: E731
                        total = pick(bq)
                        b = max(1, math.ceil(total / DOMAIN.symbols["Q"][1]))
                        shape = {"B": b, "Q": max(1, total // b), "M": pick(mm), "D": pick(dd), "k": pick(kk)}
                        if DOMAIN.outside(shape) is None and shape["k"] <= shape["M"]:
                            yield shape


def test_every_bucket_corner_runs_on_kernels_whose_contracts_admit_it():
    shapes = list(_shapes())
    assert len(shapes) > 1500
    for s in shapes:
        assert _check(s["B"], s["Q"], s["M"], s["D"], s["k"])


@pytest.mark.parametrize("cell", DOMAIN.cells, ids=lambda c: c["name"])
def test_the_domains_named_cells_are_covered(cell):
    s = cell["shape"]
    assert _check(s["B"], s["Q"], s["M"], s["D"], s["k"], metric="cos")


# Each step of the ladders (a feature tile's width, a list's length) and one past it: where a shape moves to the next
# kernel of the set, at few and many queries, small and large databases.
LADDER_D = sorted({w + i for w in planner.TILE_WIDTHS for i in (-7, 0, 1)} - {planner.MAX_D + 1})
LADDER_K = sorted({c + i for c in planner.LIST_KS for i in (0, 1)} - {planner.MAX_K + 1})
LADDER_BQM = [(1, 1, 1024), (1, 16, 3_000_001), (1, 129, 10_000_000), (4, 333, 65_537), (1, 65_536, 65_536)]


@pytest.mark.parametrize("b, q, m", LADDER_BQM)
def test_every_step_of_the_ladders_runs_on_kernels_whose_contracts_admit_it(b, q, m):
    for d in LADDER_D:
        for k in LADDER_K:
            assert _check(b, q, m, d, k)


def test_the_kernel_set_is_the_ladders_product():
    # The score kernels' widths and lengths are the ladders' (a shape between two steps takes the wider, longer one).
    assert {planner.tile_width(d) for d in range(8, planner.MAX_D + 1, 8)} == set(planner.TILE_WIDTHS)
    assert {planner.list_k(k) for k in range(1, planner.MAX_K + 1)} == set(planner.LIST_KS)

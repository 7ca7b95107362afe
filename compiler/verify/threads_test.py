"""Executing-thread counts and thread classes from conditions over builtins (and loop variables)."""

from compiler.ir.expr import E, as_expr
from compiler.verify import threads

warp, elected, lane, thread, kt = (E.sym(n) for n in ("warp", "elected", "lane", "thread", "kt"))
wg = E.sym("warpgroup")


def _count(n, cond, taken=True, env=None):
    return threads.executing_threads(n, [(as_expr(cond), taken)], env)


def test_counts_from_builtin_conditions():
    assert _count(256, (warp % 4 == 0) & elected) == 2  # one per warpgroup of a 2-warpgroup role
    assert _count(256, (warp % 4 == 0) & elected, taken=False) == 254
    assert _count(128, thread == 0) == 1
    assert _count(128, elected) == 4
    assert _count(128, (wg == 0) | (lane < 4)) == 128
    assert _count(256, (wg == 1) & (lane < 4)) == 16


def test_counts_mixing_builtins_and_loop_variables():
    assert _count(128, elected & (kt > 0), env={"kt": 0}) == 0
    assert _count(128, elected & (kt > 0), env={"kt": 3}) == 4
    assert _count(128, warp == kt % 4, env={"kt": 5}) == 32


def test_classes_merge_threads_whose_conditions_agree():
    conds = [as_expr((warp == 0) & elected & (kt > 0))]
    classes = threads.role_classes(0, 128, conds, [])
    assert sorted(c.weight for c in classes) == [1, 127]  # outside warp 0, elected or not, all see `false`


def test_classes_split_on_builtins_that_sync_values_read():
    classes = threads.role_classes(0, 256, [], [as_expr(wg)])
    assert sorted(c.weight for c in classes) == [128, 128]
    assert sorted(min(c.warpgroups) for c in classes) == [0, 1]


def test_lane_conditions_partition_per_thread():
    classes = threads.role_classes(0, 64, [as_expr(lane < 4)], [])
    assert sorted(c.weight for c in classes) == [8, 56]


def test_upper_bound_without_loop_variables():
    cond = [(as_expr(elected & (kt > 0)), True)]
    assert threads.executing_threads(128, cond) == 4  # kt unknown: the elected lanes may run it
    assert threads.executing_threads(128, [(as_expr((warp == 1) & (kt > 0)), False)]) == 128
    assert threads.executing_threads(128, [(as_expr((warp == 1) | (kt > 0)), False)]) == 96

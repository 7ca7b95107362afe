"""Small kernels for the verifier's tests: a TMA stage ring with knobs that break one thing at a time,
a ring whose consumers take turns, a barrier whose waiter is lapped, per-warpgroup named barriers, and
a branch on register data."""

from compiler.ir.builder import KernelBuilder
from compiler.ir.expr import E


def _producer(k, x, s, full, empty, n, stages, expect_bytes, wait_empty=True):
    """The producer warp of a TMA ring: it inits both barrier arrays, then its elected thread loads tile i of
    `n // 64` into slot i % stages (after waiting for the slot's release, unless `wait_empty` is False)."""
    with k.role("load", "producer", warps=1) as r:
        with r.if_(r.thread == 0):
            r.mbarrier_init(full)
            r.mbarrier_init(empty)
            r.fence("mbarrier_init")
        r.block_sync()
        with r.if_(r.elected):
            with r.loop("i", 0, n // 64) as i:
                if wait_empty:
                    r.wait(empty.round(i))
                r.expect_tx(full.round(i), expect_bytes)
                r.tma_load(x[i * 64], s[i % stages], full.round(i))


def ring(stages=2, release=True, wait_empty=True, empty_arrivals=32, expect_bytes=256, target="sm_90a", fence=True):
    """One producer warp fills a `stages`-deep ring of 64-float tiles by TMA; one consumer warp copies each
    tile into every thread's registers, each of its threads fences its reads (unless `fence` is False) and
    releases the slot, and thread 0 stores the tile."""
    k = KernelBuilder("ring", target=target)
    n = k.symbol("N", min=64, max=1 << 16, doc="elements")
    k.contract(math="y[i] = x[i]", reference="kernels.test.copy", metric="exact", tolerance=0.0)
    k.require(n % 64 == 0, "whole tiles")
    x = k.tensor("x", "f32", [n])
    y = k.tensor("y", "f32", [n], access="write")
    k.grid(1)
    s = k.shared("s", "f32", [64], stages=stages)
    v = k.registers("v", "f32", [64], layout="per_thread", owner="use")
    full = k.mbarrier("full", arrivals=1, count=stages, tx_bytes=expect_bytes)
    empty = k.mbarrier("empty", arrivals=empty_arrivals, count=stages)
    k.pipeline("ring", stages, full, empty, [s], producer="load", consumers=["use"])
    _producer(k, x, s, full, empty, n, stages, expect_bytes, wait_empty)
    with k.role("use", "consumer", warps=1) as r:
        r.block_sync()
        with r.loop("i", 0, n // 64) as i:
            r.wait(full.round(i))
            r.copy(s[i % stages], v.all)
            if release:
                if fence:
                    r.fence("proxy_async")
                r.arrive(empty.round(i))
            with r.if_(r.thread == 0):
                r.copy(v.all, y[i * 64])
    return k.build()


def alternating(stages):
    """A producer warp fills a `stages`-deep TMA ring; two consumer warps take turns on its rounds (warp w
    consumes rounds i = 2 j + w), each releasing what it consumed: sound only for an even depth."""
    k = KernelBuilder("alternating", target="sm_90a")
    n = k.symbol("N", min=128, max=1 << 16, doc="elements")
    k.contract(math="y[i] = x[i]", reference="kernels.test.copy", metric="exact", tolerance=0.0)
    k.require(n % 128 == 0, "whole pairs of tiles")
    x = k.tensor("x", "f32", [n])
    y = k.tensor("y", "f32", [n], access="write")
    k.grid(1)
    s = k.shared("s", "f32", [64], stages=stages)
    v = k.registers("v", "f32", [64], layout="per_thread", owner="use")
    full = k.mbarrier("full", arrivals=1, count=stages, tx_bytes=256)
    empty = k.mbarrier("empty", arrivals=32, count=stages)
    k.pipeline("ring", stages, full, empty, [s], producer="load", consumers=["use"])
    _producer(k, x, s, full, empty, n, stages, 256)
    with k.role("use", "consumer", warps=2) as r:
        r.block_sync()
        with r.loop("j", 0, n // 128) as j:
            i = j * 2 + r.warp
            r.wait(full.round(i))
            r.copy(s[i % stages], v.all)
            r.fence("proxy_async")
            r.arrive(empty.round(i))
            with r.if_(r.lane == 0):
                r.copy(v.all, y[i * 64])
    return k.build()


def lapping():
    """One thread completes three phases of one barrier; the other role, busy first, then waits for the first."""
    k = KernelBuilder("lap", target="sm_90a")
    k.contract(math="-", reference="kernels.test.none", metric="exact", tolerance=0.0)
    bar = k.mbarrier("bar", arrivals=1)
    v = k.registers("v", "f32", [1], layout="per_thread", owner="late")
    with k.role("early", "producer", warps=1) as r:
        with r.if_(r.thread == 0):
            r.mbarrier_init(bar)
        r.block_sync()
        with r.if_(r.thread == 0):
            with r.loop("i", 0, 3) as i:
                r.arrive(bar.round(i))
    with k.role("late", "consumer", warps=1) as r:
        r.block_sync()
        with r.loop("b", 0, 40):
            r.fill(v.all, 0.0)
        r.wait(bar.round(0))
    return k.build()


def warpgroup_sync(warpgroups=2, count=None, index="warpgroup", threads=128):
    """One role of `warpgroups` warpgroups; each syncs twice on `done[index]`, an array of `count` named barriers
    of `threads` threads (count: one per warpgroup unless given; index None: the unindexed barrier 0)."""
    k = KernelBuilder("wg_sync", target="sm_90a")
    k.contract(math="-", reference="kernels.test.none", metric="exact", tolerance=0.0)
    v = k.registers("v", "f32", [1], layout="per_thread", owner="work")
    done = k.named_barrier("done", threads=threads, count=warpgroups if count is None else count)
    with k.role("work", "compute", warpgroups=warpgroups) as r:
        with r.loop("i", 0, 2):
            r.fill(v.all, 0.0)
            r.named_sync(done, index=None if index is None else E.sym(index) if isinstance(index, str) else index)
    return k.build()


def data_branch(init_last=True, init_changed=True, sync_in_branch=False):
    """A warp reads labels and where one differs from the last (run-time data) sets `changed`, then stores it at
    the last label: register scalars in a condition and in global coordinates."""
    k = KernelBuilder("data", target="sm_90a")
    n = k.symbol("N", min=32, max=1 << 16, doc="labels")
    k.contract(math="-", reference="kernels.test.none", metric="exact", tolerance=0.0)
    labels = k.tensor("labels", "i32", [n])
    out = k.tensor("out", "f32", [n], access="write")
    k.grid(1)
    lab = k.registers("lab", "i32", [1], layout="per_thread", owner="main")
    last = k.registers("last", "i32", [1], layout="per_thread", owner="main")
    changed = k.registers("changed", "f32", [1], layout="per_thread", owner="main")
    with k.role("main", "compute", warps=1) as r:
        if init_last:
            r.fill(last.all, -1)
        if init_changed:
            r.fill(changed.all, 0.0)
        with r.loop("j", 0, 4) as j:
            r.copy(labels[j * 32 + r.lane], lab.all)
            with r.if_(E.sym("lab") != E.sym("last")):
                r.fill(changed.all, 1.0)
                if sync_in_branch:
                    r.block_sync()
            r.copy(lab.all, last.all)
        r.copy(changed.all, out["last"])
    return k.build()

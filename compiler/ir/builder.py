"""A Python builder for CAKE IR that reads like the schedule it describes.

    k = KernelBuilder("gemm", target="sm_90a")
    M = k.symbol("M", min=128, max=1 << 16)
    A = k.tensor("A", "bf16", [M, K])
    sA = k.shared("sA", "bf16", [128, 64], stages=4, swizzle="128b")
    full = k.mbarrier("full", arrivals=1, count=4, tx_bytes=k.tile_bytes(sA, sB))
    with k.role("load", "producer", warpgroups=1, registers=40) as r:
        with r.if_((r.warp == 0) & r.elected):
            with r.loop("kt", 0, K // 64) as kt:
                r.wait(empty.round(kt))
                r.expect_tx(full.round(kt), k.tile_bytes(sA, sB))
                r.tma_load(A[m0, kt * 64], sA[kt % 4], full.round(kt))
    kernel = k.build()

Handles (tensors, regions, barriers) turn indexing into references: `A[i, j]`
is a GlobalRef, `sA[s]` a TileRef of stage s, `full[i]` / `full.round(r)` a
BarrierRef. Enum arguments take short names ("bf16", "128b", "wgmma_acc").
The builder only records; checking is the verifier's job.
"""

import contextlib

from cake.ir.v1 import ir_pb2

from compiler.ir import smem_layout
from compiler.ir.enums import value_of
from compiler.ir.expr import E, as_expr


def _enum(enum_type, short):
    return value_of(enum_type.DESCRIPTOR, short)


def _exprs(values):
    return [as_expr(v) for v in values]


class TensorHandle:
    """A tensor param; `A[i, j]` is the GlobalRef of the tile whose origin is (i, j)."""

    def __init__(self, name):
        self.name = name

    def __getitem__(self, coords):
        coords = coords if isinstance(coords, tuple) else (coords,)
        return ir_pb2.GlobalRef(param=self.name, coords=_exprs(coords))


class RegionHandle:
    """A region; `sA[s]` is stage s, `sA.tile(stage, window)` adds a window of (start, size) pairs."""

    def __init__(self, name):
        self.name = name

    def tile(self, stage=None, window=()):
        ref = ir_pb2.TileRef(region=self.name)
        if stage is not None:
            ref.stage.CopyFrom(as_expr(stage))
        for start, size in window:
            ref.window.add(start=as_expr(start), size=size)
        return ref

    def __getitem__(self, stage):
        return self.tile(stage=stage)

    @property
    def all(self):
        """The whole region (stage unset)."""
        return self.tile()


class BarrierHandle:
    """A barrier array; `full[i]` addresses slot i, `full.round(r)` the slot of ring round r."""

    def __init__(self, name):
        self.name = name

    def __getitem__(self, index):
        return ir_pb2.BarrierRef(barrier=self.name, index=as_expr(index))

    def round(self, r):
        return ir_pb2.BarrierRef(barrier=self.name, round=as_expr(r))

    @property
    def ref(self):
        """The array itself (for single barriers)."""
        return ir_pb2.BarrierRef(barrier=self.name)


class _Dims:
    """x, y, z of a builtin such as block (blockIdx) or grid (gridDim)."""

    def __init__(self, prefix):
        self.x, self.y, self.z = (E.sym("%s.%s" % (prefix, d)) for d in "xyz")


block = _Dims("block")
grid = _Dims("grid")


def coord(axis):
    """Operand: the destination element's coordinate along `axis`."""
    return ir_pb2.Operand(coord=axis)


def _operand(value):
    if isinstance(value, ir_pb2.Operand):
        return value
    if isinstance(value, ir_pb2.TileRef):
        return ir_pb2.Operand(tile=value)
    if isinstance(value, float):
        return ir_pb2.Operand(imm=value)
    return ir_pb2.Operand(scalar=as_expr(value))


def _barrier_ref(value):
    return value.ref if isinstance(value, BarrierHandle) else value


class _Body:
    """Appends ops to the innermost open body (role body, loop body, branch arm)."""

    # Builtins visible in every role body.
    thread = E.sym("thread")
    warp = E.sym("warp")
    warpgroup = E.sym("warpgroup")
    lane = E.sym("lane")
    elected = E.sym("elected")

    def __init__(self, ops):
        self._stack = [ops]

    def _add(self, **op):
        self._stack[-1].add(**op)

    @contextlib.contextmanager
    def _nested(self, ops):
        self._stack.append(ops)
        try:
            yield
        finally:
            self._stack.pop()

    # -- control flow --------------------------------------------------------

    @contextlib.contextmanager
    def loop(self, var, start, end, step=None, unroll=0):
        """A serial loop; yields the loop variable as an expression."""
        loop = ir_pb2.Loop(var=var, start=as_expr(start), end=as_expr(end), unroll=unroll)
        if step is not None:
            loop.step.CopyFrom(as_expr(step))
        self._add(loop=loop)
        with self._nested(self._stack[-1][-1].loop.body):
            yield E.sym(var)

    @contextlib.contextmanager
    def tiles(self, var, end, counter, start=0):
        """A persistent tile loop: var = start + block.x + i * grid.x; yields (var, counter i)."""
        loop = ir_pb2.Loop(
            var=var,
            start=as_expr(start),
            end=as_expr(end),
            kind=ir_pb2.LOOP_KIND_PERSISTENT,
            counter=counter,
        )
        self._add(loop=loop)
        with self._nested(self._stack[-1][-1].loop.body):
            yield E.sym(var), E.sym(counter)

    @contextlib.contextmanager
    def if_(self, cond):
        """The then-arm of a branch; `with r.else_():` right after it opens the else-arm."""
        self._add(branch=ir_pb2.Branch(cond=as_expr(cond)))
        with self._nested(self._stack[-1][-1].branch.then_body):
            yield

    @contextlib.contextmanager
    def else_(self):
        last = self._stack[-1][-1] if len(self._stack[-1]) else None
        if last is None or last.WhichOneof("kind") != "branch":
            raise ValueError("else_() must directly follow an if_() block")
        with self._nested(last.branch.else_body):
            yield

    # -- movement ------------------------------------------------------------

    def tma_load(self, src, dst, barrier, multicast_mask=0):
        self._add(tma_load=ir_pb2.TmaLoad(src=src, dst=dst, barrier=_barrier_ref(barrier), multicast_mask=multicast_mask))

    def tma_store(self, src, dst):
        self._add(tma_store=ir_pb2.TmaStore(src=src, dst=dst))

    def bulk_wait(self, pending=0):
        self._add(bulk_wait=ir_pb2.BulkWait(pending=pending))

    def cp_async(self, src, dst, vector_bytes=16):
        self._add(cp_async=ir_pb2.CpAsync(src=src, dst=dst, vector_bytes=vector_bytes))

    def cp_async_wait(self, pending=0):
        self._add(cp_async_wait=ir_pb2.CpAsyncWait(pending=pending))

    def copy(self, src, dst):
        op = ir_pb2.Copy()
        (op.src_tile if isinstance(src, ir_pb2.TileRef) else op.src_global).CopyFrom(src)
        (op.dst_tile if isinstance(dst, ir_pb2.TileRef) else op.dst_global).CopyFrom(dst)
        self._add(copy=op)

    def ldmatrix(self, src, dst, transpose=False):
        self._add(ldmatrix=ir_pb2.Ldmatrix(src=src, dst=dst, transpose=transpose))

    def stmatrix(self, src, dst, transpose=False):
        self._add(stmatrix=ir_pb2.Stmatrix(src=src, dst=dst, transpose=transpose))

    # -- matrix --------------------------------------------------------------

    def mma(self, kind, a, b, acc, accumulate=1, a_major="k", b_major="k", instr_shape=()):
        """acc (+)= A * B; `accumulate` is an expression (0 zero-initialises acc)."""
        self._add(
            mma=ir_pb2.Mma(
                kind=_enum(ir_pb2.MmaKind, kind),
                a=a,
                b=b,
                acc=acc,
                a_major=_enum(ir_pb2.Major, a_major),
                b_major=_enum(ir_pb2.Major, b_major),
                accumulate=as_expr(accumulate),
                instr_shape=list(instr_shape),
            )
        )

    def mma_wait(self, pending=0):
        self._add(mma_wait=ir_pb2.MmaWait(pending=pending))

    def mma_commit(self, barrier):
        self._add(mma_commit=ir_pb2.MmaCommit(barrier=_barrier_ref(barrier)))

    def tmem_load(self, src, dst):
        self._add(tmem_load=ir_pb2.TmemLoad(src=src, dst=dst))

    # -- math ----------------------------------------------------------------

    def fill(self, dst, value):
        self._add(fill=ir_pb2.Fill(dst=dst, value=float(value)))

    def ew(self, op, dst, *srcs):
        """Elementwise `dst = op(srcs...)`; a float is an immediate, an int/E a scalar."""
        self._add(
            elementwise=ir_pb2.Elementwise(
                op=_enum(ir_pb2.ElementwiseOp, op), dst=dst, srcs=[_operand(s) for s in srcs]
            )
        )

    def reduce(self, op, src, dst, axis, scope, accumulate=False):
        self._add(
            reduce=ir_pb2.Reduce(
                op=_enum(ir_pb2.ReduceOp, op),
                src=src,
                dst=dst,
                axis=axis,
                scope=_enum(ir_pb2.Scope, scope),
                accumulate=accumulate,
            )
        )

    def arg_reduce(self, op, src, axis, index_base, values, indices, scope, accumulate=False):
        self._add(
            arg_reduce=ir_pb2.ArgReduce(
                op=_enum(ir_pb2.ArgReduceOp, op),
                src=src,
                axis=axis,
                index_base=as_expr(index_base),
                values=values,
                indices=indices,
                scope=_enum(ir_pb2.Scope, scope),
                accumulate=accumulate,
            )
        )

    def top_k(self, src, axis, k, index_base, values, indices, scope="thread", largest=False, src_indices=None,
              index_limit=None, exclude_base=None, vote=False, own_threshold=False):
        """Insert the candidates of score tile `src` into each thread's running top-k lists (`own_threshold`: a
        voted insertion tests against each thread's own k-th entry, TopK.own_threshold)."""
        op = ir_pb2.TopK(
            src=src,
            axis=axis,
            k=k,
            largest=largest,
            index_base=as_expr(index_base),
            values=values,
            indices=indices,
            scope=_enum(ir_pb2.Scope, scope),
            vote=vote,
            own_threshold=own_threshold,
        )
        if src_indices is not None:
            op.src_indices.CopyFrom(src_indices)
        if index_limit is not None:
            op.index_limit.CopyFrom(as_expr(index_limit))
        if exclude_base is not None:
            op.exclude_base.CopyFrom(as_expr(exclude_base))
        self._add(top_k=op)

    def top_k_merge(self, values, indices, k, scope, largest=False):
        """Merge the lists the threads of `scope` hold (scope "thread": re-sort each thread's own)."""
        self._add(
            top_k=ir_pb2.TopK(
                src=values, k=k, largest=largest, values=values, indices=indices, scope=_enum(ir_pb2.Scope, scope)
            )
        )

    def rescore(self, values, indices, query, database, metric, scope="warp"):
        """Recompute list scores exactly from the query row and the database rows they index."""
        self._add(
            rescore=ir_pb2.Rescore(
                values=values,
                indices=indices,
                query=query,
                database=database,
                metric=_enum(ir_pb2.RescoreMetric, metric),
                scope=_enum(ir_pb2.Scope, scope),
            )
        )

    def top_k_collect(self, src, bound, index_base, values, indices, count, largest=False, index_limit=None,
                      exclude_base=None):
        """Append the candidates of score tile `src` that beat their row's `bound` to the rows of the global
        candidate buffers at `values`/`indices` (each row's length so far in `count`; TopKCollect)."""
        op = ir_pb2.TopKCollect(src=src, axis=1, largest=largest, index_base=as_expr(index_base), bound=bound,
                                values=values, indices=indices, count=count)
        if index_limit is not None:
            op.index_limit.CopyFrom(as_expr(index_limit))
        if exclude_base is not None:
            op.exclude_base.CopyFrom(as_expr(exclude_base))
        self._add(top_k_collect=op)

    def top_k_select(self, values, indices, count, k, query, database, metric, scratch_values, scratch_indices, dist,
                     idx, largest=False):
        """The k best of one query's candidate buffer row, rescored exactly and sorted, into dist/idx (TopKSelect)."""
        self._add(top_k_select=ir_pb2.TopKSelect(
            values=values, indices=indices, count=count, k=as_expr(k), largest=largest, query=query,
            database=database, metric=_enum(ir_pb2.RescoreMetric, metric), scratch_values=scratch_values,
            scratch_indices=scratch_indices, dist=dist, idx=idx))

    def scan(self, src, dst, axis, scope, exclusive=False):
        self._add(scan=ir_pb2.Scan(src=src, dst=dst, axis=axis, exclusive=exclusive, scope=_enum(ir_pb2.Scope, scope)))

    def tri_solve(self, a, x, b=None, lower=True, unit_diagonal=False):
        op = ir_pb2.TriSolve(a=a, x=x, lower=lower, unit_diagonal=unit_diagonal)
        if b is not None:
            op.b.CopyFrom(b)
        self._add(tri_solve=op)

    def atomic(self, op, src, dst, index=None, index_axis=0, aggregation="none"):
        atomic = ir_pb2.Atomic(
            op=_enum(ir_pb2.AtomicOp, op),
            src=src,
            dst=dst,
            index_axis=index_axis,
            aggregation=_enum(ir_pb2.Aggregation, aggregation),
        )
        if index is not None:
            atomic.index.CopyFrom(index)
        self._add(atomic=atomic)

    # -- synchronization -----------------------------------------------------

    def mbarrier_init(self, barrier):
        self._add(mbarrier_init=ir_pb2.MbarrierInit(barrier=barrier.name))

    def arrive(self, barrier):
        self._add(mbarrier_arrive=ir_pb2.MbarrierArrive(barrier=_barrier_ref(barrier)))

    def expect_tx(self, barrier, bytes):
        self._add(mbarrier_expect_tx=ir_pb2.MbarrierExpectTx(barrier=_barrier_ref(barrier), bytes=bytes))

    def wait(self, barrier, phase=None):
        """Wait on an mbarrier; with a `round` reference the parity is derived, else give `phase`."""
        op = ir_pb2.MbarrierWait(barrier=_barrier_ref(barrier))
        if phase is not None:
            op.phase.CopyFrom(as_expr(phase))
        self._add(mbarrier_wait=op)

    def named_sync(self, barrier, index=None):
        op = ir_pb2.NamedBarrierSync(barrier=barrier.name)
        if index is not None:
            op.index.CopyFrom(as_expr(index))
        self._add(named_barrier_sync=op)

    def named_arrive(self, barrier, index=None):
        op = ir_pb2.NamedBarrierArrive(barrier=barrier.name)
        if index is not None:
            op.index.CopyFrom(as_expr(index))
        self._add(named_barrier_arrive=op)

    def fence(self, kind):
        self._add(fence=ir_pb2.Fence(kind=_enum(ir_pb2.FenceKind, kind)))

    def block_sync(self):
        self._add(block_sync=ir_pb2.BlockSync())


class RoleBuilder(_Body):
    """Builds one role's body."""


class KernelBuilder:
    """Records a kernel's declarations and roles; `build()` returns the Kernel proto."""

    def __init__(self, name, target):
        self._k = ir_pb2.Kernel(name=name, target=_enum(ir_pb2.Target, target))

    # -- contract ------------------------------------------------------------

    def contract(self, math, reference, metric, tolerance):
        c = self._k.contract
        c.math, c.reference = math, reference
        c.metric = _enum(ir_pb2.Metric, metric)
        c.tolerance = tolerance

    def symbol(self, name, min=1, max=(1 << 31) - 1, value=None, doc=""):
        """A shape symbol (a runtime argument unless `value` specializes it)."""
        s = self._k.contract.symbols.add(name=name, min=min, max=max, doc=doc)
        if value is not None:
            s.value = value
        return E.sym(name)

    def require(self, cond, doc):
        """A contract constraint that every valid input satisfies."""
        self._k.contract.constraints.add(expr=as_expr(cond), doc=doc)

    # -- params and launch ---------------------------------------------------

    def tensor(self, name, dtype, shape, access="read", align_bytes=16, doc=""):
        self._k.params.add(
            name=name,
            kind=ir_pb2.PARAM_KIND_TENSOR,
            dtype=_enum(ir_pb2.Dtype, dtype),
            shape=_exprs(shape),
            access=_enum(ir_pb2.Access, access),
            align_bytes=align_bytes,
            doc=doc,
        )
        return TensorHandle(name)

    def scalar(self, name, dtype, doc=""):
        self._k.params.add(
            name=name,
            kind=ir_pb2.PARAM_KIND_SCALAR,
            dtype=_enum(ir_pb2.Dtype, dtype),
            access=ir_pb2.ACCESS_READ,
            doc=doc,
        )
        return E.sym(name)

    def grid(self, *dims):
        del self._k.launch.grid[:]
        self._k.launch.grid.extend(_exprs(dims))

    def cluster(self, *dims):
        del self._k.launch.cluster[:]
        self._k.launch.cluster.extend(dims)

    def persistent(self, min_blocks_per_sm=1):
        self._k.launch.persistent = True
        self._k.launch.min_blocks_per_sm = min_blocks_per_sm

    def min_blocks_per_sm(self, n):
        self._k.launch.min_blocks_per_sm = n

    # -- memory --------------------------------------------------------------

    def shared(self, name, dtype, shape, stages=1, swizzle="none"):
        self._k.regions.add(
            name=name,
            space=ir_pb2.MEMORY_SPACE_SHARED,
            dtype=_enum(ir_pb2.Dtype, dtype),
            shape=list(shape),
            stages=stages,
            swizzle=_enum(ir_pb2.Swizzle, swizzle),
        )
        return RegionHandle(name)

    def tile_bytes(self, *regions):
        """Bytes of one stage of each of `regions` (handles), together: what one round of TMA copies of their
        whole tiles delivers, the count an mbarrier's tx_bytes and expect_tx give (smem_layout.tile_bytes)."""
        by_name = {r.name: r for r in self._k.regions}
        return sum(smem_layout.tile_bytes(by_name[h.name]) for h in regions)

    def registers(self, name, dtype, shape, layout, owner):
        self._k.regions.add(
            name=name,
            space=ir_pb2.MEMORY_SPACE_REGISTER,
            dtype=_enum(ir_pb2.Dtype, dtype),
            shape=list(shape),
            layout=_enum(ir_pb2.FragmentLayout, layout),
            owner=owner,
        )
        return RegionHandle(name)

    def tensor_memory(self, name, dtype, shape, owner):
        self._k.regions.add(
            name=name,
            space=ir_pb2.MEMORY_SPACE_TENSOR,
            dtype=_enum(ir_pb2.Dtype, dtype),
            shape=list(shape),
            owner=owner,
        )
        return RegionHandle(name)

    # -- synchronization -----------------------------------------------------

    def mbarrier(self, name, arrivals, count=1, tx_bytes=0):
        self._k.barriers.add(
            name=name, kind=ir_pb2.BARRIER_KIND_MBARRIER, count=count, arrivals=arrivals, tx_bytes=tx_bytes
        )
        return BarrierHandle(name)

    def named_barrier(self, name, threads, count=1):
        self._k.barriers.add(name=name, kind=ir_pb2.BARRIER_KIND_NAMED, count=count, arrivals=threads)
        return BarrierHandle(name)

    def pipeline(self, name, stages, full, empty, regions, producer, consumers):
        self._k.pipelines.add(
            name=name,
            stages=stages,
            full=full.name,
            empty=empty.name,
            regions=[r.name for r in regions],
            producer=producer,
            consumers=list(consumers),
        )

    # -- roles ---------------------------------------------------------------

    @contextlib.contextmanager
    def role(self, name, kind, warps=None, warpgroups=None, registers=0):
        """Declare a role (give `warps` or `warpgroups`) and build its body."""
        if (warps is None) == (warpgroups is None):
            raise ValueError("role %r: give exactly one of warps= or warpgroups=" % name)
        role = self._k.roles.add(name=name, kind=_enum(ir_pb2.RoleKind, kind), registers=registers)
        if warps is not None:
            role.warps = warps
        else:
            role.warpgroups = warpgroups
        yield RoleBuilder(role.body)

    def build(self):
        """A copy of the kernel built so far."""
        out = ir_pb2.Kernel()
        out.CopyFrom(self._k)
        return out

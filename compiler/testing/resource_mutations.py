"""Mutations of a kernel's resources, targets and launch: the space where the verifier, the cost
model and lowering must agree on whether a kernel fits (compiler/consistency_test.py).

`mutants(bases, count, seed)` yields (name, kernel): copies of the base kernels with one to
three of these edits, drawn from a seeded random generator (the same seed, the same mutants):
- a role's register budget: 0, a legal setmaxnreg value, or any count up to 300;
- min_blocks_per_sm from 0 to 8;
- the target (any of the three);
- a shared region's stages (1 to 8, or doubled);
- a named barrier array's count (1 to 12);
- an idle role of 1 to 32 warps, taking part in the block's block_syncs;
- the cluster (none, or 2 CTAs along x);
- a top-k list's length (1 to 64): the k of every TopK on its lists and their regions' last
  dimension, so register lists of every layout (wgmma_rows, wgmma_cols, mma_rows,
  row_per_thread, per_thread) grow and shrink against their role's budget.
Most mutants keep the rest of the kernel well-formed, so they land in the resource and
target rules the stages must agree on; the consistency test skips the others.
"""

import random

from cake.ir.v1 import ir_pb2

from compiler.ir import paths

TARGETS = (ir_pb2.TARGET_SM_80, ir_pb2.TARGET_SM_90A, ir_pb2.TARGET_SM_100A)


def _registers(k, rng):
    if k.roles:
        role = rng.choice(k.roles)
        role.registers = rng.choice([0, rng.randrange(24, 257, 8), rng.randrange(1, 301)])


def _min_blocks(k, rng):
    k.launch.min_blocks_per_sm = rng.randrange(0, 9)


def _target(k, rng):
    k.target = rng.choice(TARGETS)


def _stages(k, rng):
    shared = [r for r in k.regions if r.space == ir_pb2.MEMORY_SPACE_SHARED]
    if shared:
        r = rng.choice(shared)
        r.stages = rng.choice([rng.randrange(1, 9), 2 * max(1, r.stages)])


def _named_count(k, rng):
    named = [b for b in k.barriers if b.kind == ir_pb2.BARRIER_KIND_NAMED]
    if named:
        rng.choice(named).count = rng.randrange(1, 13)


def _idle_role(k, rng):
    """A role that only meets the others at their top-level block_syncs (as many as role 0 has)."""
    if not k.roles:
        return
    syncs = sum(1 for op in k.roles[0].body if op.WhichOneof("kind") == "block_sync")
    role = k.roles.add(name="idle_%d" % len(k.roles), kind=ir_pb2.ROLE_KIND_COMPUTE, warps=rng.randrange(1, 33))
    for _ in range(syncs):
        role.body.add(block_sync=ir_pb2.BlockSync())


def _cluster(k, rng):
    del k.launch.cluster[:]
    if rng.random() < 0.5:
        k.launch.cluster.extend([2, 1, 1])


def _list_length(k, rng):
    tops = [n for _, n in paths.walk(k) if isinstance(n, ir_pb2.TopK)]
    if not tops:
        return
    pick = rng.choice(tops)
    lists, length = {pick.values.region, pick.indices.region}, rng.randrange(1, 65)
    for r in k.regions:
        if r.name in lists and r.shape:
            r.shape[-1] = length
    for t in tops:
        if t.values.region in lists:
            t.k = length


EDITS = (_registers, _registers, _min_blocks, _target, _stages, _named_count, _idle_role, _cluster, _list_length)


def mutants(bases, count, seed=0):
    """`count` (name, kernel) mutants of `bases` ({name: kernel}), deterministic in `seed`."""
    rng = random.Random(seed)
    names = sorted(bases)
    for i in range(count):
        name = names[i % len(names)]
        k = ir_pb2.Kernel()
        k.CopyFrom(bases[name])
        edits = [rng.choice(EDITS) for _ in range(rng.randrange(1, 4))]
        for edit in edits:
            edit(k, rng)
        yield "%s#%d(%s)" % (name, i, ",".join(e.__name__.lstrip("_") for e in edits)), k

"""SM targets: the one place where feature gates on the GPU architecture live.

A Target is a frozen, hashable option object (it is part of every compile-cache
key). Hardware numbers for the cost model live in compiler/analysis's data file;
this module holds only what code generation and verification branch on.
"""

import dataclasses


@dataclasses.dataclass(frozen=True)
class Target:
    """One SM target that CAKE compiles for."""

    name: str  # "sm_90a": what users and the IR say
    arch: str  # "90a": what nvcc's -gencode says
    compute_capability: tuple  # (9, 0): what the driver reports
    features: frozenset  # instruction families the target has (see FEATURES)

    def has(self, feature):
        """True when the target supports an instruction family named in FEATURES."""
        if feature not in FEATURES:
            raise KeyError("unknown feature %r (known: %s)" % (feature, ", ".join(sorted(FEATURES))))
        return feature in self.features

    @property
    def gencode(self):
        """nvcc flag producing this target's machine code."""
        return "-gencode=arch=compute_{0},code=sm_{0}".format(self.arch)


# Instruction families a schedule may use, with the first target that has them.
FEATURES = {
    "cp_async": "cp.async (sm_80+)",
    "mma_sync": "mma.sync tensor-core MMA (sm_80+)",
    "ldmatrix": "ldmatrix (sm_75+), stmatrix (sm_90+ only: see stmatrix)",
    "stmatrix": "stmatrix (sm_90+)",
    "mbarrier_tx": "mbarrier transaction counts, expect_tx (sm_90+)",
    "tma": "cp.async.bulk.tensor, the Tensor Memory Accelerator (sm_90+)",
    "wgmma": "wgmma.mma_async warpgroup MMA (sm_90a only)",
    "setmaxnreg": "setmaxnreg register reallocation (sm_90a, sm_100a)",
    "clusters": "thread-block clusters and distributed shared memory (sm_90+)",
    "tcgen05": "tcgen05.mma and tensor memory (sm_100a)",
    "tensor_memory": "tensor memory (TMEM) allocation (sm_100a)",
}

_SM80 = frozenset({"cp_async", "mma_sync", "ldmatrix"})
_SM90A = _SM80 | {"stmatrix", "mbarrier_tx", "tma", "wgmma", "setmaxnreg", "clusters"}
# sm_100a keeps mma.sync, TMA and clusters but has no wgmma: its MMA is tcgen05.
_SM100A = (_SM90A - {"wgmma"}) | {"tcgen05", "tensor_memory"}

TARGETS = {
    t.name: t
    for t in (
        Target("sm_80", "80", (8, 0), _SM80),
        Target("sm_90a", "90a", (9, 0), _SM90A),
        Target("sm_100a", "100a", (10, 0), _SM100A),
    )
}


def get_target(name):
    """The Target called `name`; ValueError naming the known targets otherwise."""
    try:
        return TARGETS[name]
    except KeyError:
        raise ValueError("unknown target %r: CAKE compiles for %s" % (name, ", ".join(TARGETS))) from None


def target_for_capability(major, minor):
    """The target to build for a device of compute capability (major, minor)."""
    for t in TARGETS.values():
        if t.compute_capability == (major, minor):
            return t
    raise ValueError("no CAKE target for compute capability %d.%d" % (major, minor))

"""SM targets: the one place where feature gates on the GPU architecture live.

A Target is a frozen, hashable option object (it is part of every compile-cache
key). What it holds comes from the one target database (targets.json, read by
database.py, every figure with its source): the target's nvcc arch, compute
capability and instruction families. The rest of the package derives from the
same data:

| module | what |
|---|---|
| `database.py`, `targets.json` | the data: per target its facts, per device its hardware figures and limits |
| `registers.py` | register budgets: at launch, the setmaxnreg pool, legal budgets, a role's need beyond its fragments |
| `op_features.py` | which IR ops, regions and launch settings need which instruction family |
"""

import dataclasses

from compiler.targets import database


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


# Instruction families a schedule may use (name -> what it is, with the first targets that have it).
FEATURES = dict(database.load().features)

TARGETS = {
    facts.name: Target(facts.name, facts.arch, facts.compute_capability, facts.features)
    for facts in sorted(database.load().targets.values(), key=lambda f: f.compute_capability)
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

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
| `fits.py` | whether a kernel's block fits its target: threads, shared memory, register pool, role registers |
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

    def runs_on(self, major, minor):
        """True when this target's cubins run on a device of compute capability (major, minor).

        An arch-specific target ("a": wgmma, setmaxnreg, tcgen05) runs only on its own
        capability; a portable one on every later minor version of its major (sm_80 on 8.x).
        """
        own_major, own_minor = self.compute_capability
        if self.arch.endswith("a"):
            return (major, minor) == self.compute_capability
        return major == own_major and minor >= own_minor

    @property
    def devices(self):
        """The devices its cubins run on, in words: "compute capability 9.0" or "compute capability 8.x"."""
        major, minor = self.compute_capability
        return "compute capability %d.%s" % (major, minor if self.arch.endswith("a") else "x")

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


def targets_for_device(major, minor):
    """The targets whose cubins run on a device of compute capability (major, minor), newest first."""
    return [t for t in sorted(TARGETS.values(), key=lambda t: t.compute_capability, reverse=True)
            if t.runs_on(major, minor)]


class UnsupportedDevice(RuntimeError):
    """A GPU whose compute capability none of an op's targets runs on."""


def pick(capability, offered, op, device_name=""):
    """The newest of the `offered` target names whose cubins run on a device of `capability` (major, minor).

    UnsupportedDevice, naming the device, its capability and the targets the op has, when none does.
    """
    major, minor = capability
    for t in targets_for_device(major, minor):
        if t.name in offered:
            return t.name
    device = "compute capability %d.%d" % (major, minor)
    supported = ", ".join("%s (%s)" % (name, get_target(name).devices) for name in offered)
    raise UnsupportedDevice("%s has no kernel for this GPU (%s%s): it has kernels for %s"
                            % (op, device_name + ", " if device_name else "", device, supported))

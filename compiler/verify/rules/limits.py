"""Resource limits of a target, read from the one target database (compiler/analysis/targets.json).

The verifier's own numbers live here only where the database has no field:
setmaxnreg's legal range and the registers a role needs beyond its fragments.
"""

from compiler.analysis import target_db

# setmaxnreg.{inc,dec}.sync.aligned.u32 takes a multiple of 8 in [24, 256] (PTX ISA).
SETMAXNREG_MIN = 24
SETMAXNREG_MAX = 256
SETMAXNREG_STEP = 8
# Registers a thread needs besides its register fragments: addresses, loop counters,
# descriptors, predicates. ptxas spills below this.
REGISTER_MARGIN = 16


def for_target(target_name):
    """The target's default device limits (compiler.analysis.target_db.Limits), None when unknown."""
    try:
        return target_db.limits(target_name)
    except ValueError:
        return None

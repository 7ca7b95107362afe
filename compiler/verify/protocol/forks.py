"""Inputs whose runs share a prefix: the protocol model runs them as forks of one run.

The inputs of a kernel (inputs.py: every symbolic loop running t = 1 .. 2S + 1
trips) differ in the symbols the loops are aimed with. Where the model reads
those symbols only in loop ends and branch conditions (no start, step, window,
stage, slot, phase or grid size reads them: program.compile_roles says which
names it reads elsewhere), two inputs execute the same ops in the same order,
with the same effects, until some class decides a loop's trips or a branch's
arm differently. So the last input (the one with the most trips) runs, and each
other input of its group forks from it there: simulate.Model.copy copies the
state (the class that decided, mid-walk), and the copy runs on alone under that
input's values. An input that never parts from it finds what it finds, in as
many steps. The run stops once what the inputs up to the next input it does not
serve find is known (settle); a later member forks from a fresh run.

Each input's finding, and the steps it took, are those of running it alone from
its start; simulate.run reports them as if the inputs had run one after another
(the first finding ends the model, the step budget counts every input's steps in
turn).
"""


class Settled(Exception):
    """Raised from a run once what the model reports no longer depends on it going on (settle)."""


def groups(runs, fixed):
    """{base: {member: values}}: for each run the runs after it do not fork from, the earlier runs that differ
    from it only in names outside `fixed`, with their values of those names. `runs`: [(t, env)] in order."""
    out, grouped = {}, set()
    for base in range(len(runs) - 1, -1, -1):
        if base in grouped:
            continue
        env = runs[base][1]
        members = {}
        for k in range(base):
            if k in grouped:
                continue
            other = runs[k][1]
            if other.keys() != env.keys():
                continue
            delta = {name: v for name, v in other.items() if env[name] != v}
            if fixed.isdisjoint(delta):
                members[k] = delta
        if members:
            out[base] = members
            grouped |= members.keys()
        grouped.add(base)
    return out


def settle(needed, outcomes):
    """Raise Settled once the runs `needed` (indices, in order) are known to be clean up to one that found
    something, or all of them: what comes after no longer depends on the run going on."""
    for k in needed:
        found = outcomes.get(k)
        if found is None:
            return
        if found[0] is not None:
            break
    raise Settled

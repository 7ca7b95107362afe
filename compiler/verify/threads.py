"""Which threads of a role execute what: thread classes and executing-thread counts.

Builtins are role-local (ir.proto): thread t of a role has warp t / 32,
warpgroup t / 128, lane t % 32, and `elected` is 1 in exactly one lane per
warp (modelled as lane 0).

Threads whose every branch outcome and every synchronization-relevant value
is the same behave identically in the protocol model, so the model runs one
*class* per such set, weighted by its size. `role_classes` partitions a role by:
- each builtin-only atom of a branch condition (`warp % 4 == 0`, `elected`): its truth;
- each atom mixing builtins with other names (`warp == kt % 4`), and each
  synchronization-relevant expression that mentions builtins (a barrier index
  `full[warpgroup]`, a stage): the values of the builtins it mentions.
"""

from compiler.verify import exprs

THREAD = frozenset(exprs.THREAD_BUILTINS)


def builtins_of(thread):
    """The builtin values of role-local thread `thread`."""
    lane, warp = thread & 31, thread >> 5
    return {"thread": thread, "warp": warp, "warpgroup": warp >> 2, "lane": lane, "elected": int(lane == 0)}


class ThreadClass:
    """Threads of one role that behave identically: `weight` of them, represented by `env`."""

    __slots__ = ("role_index", "weight", "env", "warps", "warpgroups", "index")

    def __init__(self, role_index, env):
        self.role_index = role_index
        self.weight = 0
        self.env = env  # builtins of the first (representative) thread
        self.warps = set()
        self.warpgroups = set()
        self.index = -1


def _safe(fn, env):
    try:
        return fn(env)
    except exprs.ExprError:
        return None


class _Key:
    """How to tell two threads' classes apart (see the module docstring)."""

    def __init__(self, conds, values):
        seen, self.bits, self.named = set(), [], set()
        for cond in conds:
            for atom in exprs.atoms(cond):
                ns = exprs.names(atom)
                mentioned = ns & THREAD
                if not mentioned:
                    continue
                if ns <= THREAD:
                    text = atom.SerializeToString()
                    if text not in seen:
                        seen.add(text)
                        self.bits.append(exprs.compile_expr(atom))
                else:
                    self.named |= mentioned
        for value in values:
            self.named |= exprs.names(value) & THREAD
        self.named = sorted(self.named)
        # Lane-level builtins force a per-thread partition; otherwise a warp's lanes 1..31 agree.
        self.per_thread = any({"thread", "lane"} & exprs.names(c) for c in conds) or bool(
            {"thread", "lane"} & set(self.named)
        )

    def of(self, env):
        return tuple(_safe(b, env) for b in self.bits) + tuple(env[n] for n in self.named)


def role_classes(role_index, threads, conds, values):
    """Thread classes of a role of `threads` threads, keyed by its branch `conds` and sync `values` (Exprs)."""
    key = _Key(conds, values)
    classes = {}

    def add(thread, weight):
        env = builtins_of(thread)
        k = key.of(env)
        c = classes.get(k)
        if c is None:
            c = classes[k] = ThreadClass(role_index, env)
        c.weight += weight
        c.warps.add(env["warp"])
        c.warpgroups.add(env["warpgroup"])

    if key.per_thread:
        for t in range(threads):
            add(t, 1)
    else:  # only warp-level builtins and `elected` matter: lane 0 stands for itself, lane 1 for 31 lanes
        for w in range(threads // 32):
            add(32 * w, 1)
            add(32 * w + 1, 31)
    return list(classes.values())


def executing_threads(threads, conds, env=None):
    """How many of a role's `threads` threads run an op enclosed by `conds` ((Expr, taken), ...).

    `env` binds the non-builtin names the conditions mention (loop variables,
    symbols); a condition that cannot be evaluated counts as not taken.
    """
    compiled = [(exprs.compile_expr(c), taken) for c, taken in conds]
    count = 0
    for t in range(threads):
        scope = dict(env or {})
        scope.update(builtins_of(t))
        if all(bool(_safe(fn, scope)) == taken for fn, taken in compiled):
            count += 1
    return count

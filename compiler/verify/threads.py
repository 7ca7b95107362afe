"""Which threads of a role execute what: thread classes and executing-thread counts.

Builtins are role-local (ir.proto): thread t of a role has warp t / 32,
warpgroup t / 128, lane t % 32, and `elected` is 1 in exactly one lane per
warp (modelled as lane 0).

Threads whose every branch outcome and every synchronization-relevant value
is the same behave identically in the protocol model, so the model runs one
*class* per such set, weighted by its size. `role_classes` keys each thread by:
- each branch condition partially evaluated with the thread's builtins bound:
  builtin-only atoms (`warp % 4 == 0`, `elected`) become true or false, other
  atoms stay symbolic (atoms mixing builtins with other names, `warp == kt % 4`,
  keep the builtin values they read), and/or simplify. Under
  `warp == 0 && elected && t > 0` a thread outside warp 0 gets `false` whether
  elected or not, so the two share a class;
- the values of the builtins that synchronization-relevant expressions read
  (a barrier index `full[warpgroup]`, a stage). A named-barrier index that reads
  only `warp` and `warpgroup` does not split classes: the model evaluates it per
  warp of a class (protocol/sync_ops.named_targets), using `warp_weights`.
"""

from compiler.verify import exprs

THREAD = frozenset(exprs.THREAD_BUILTINS)


def builtins_of(thread):
    """The builtin values of role-local thread `thread`."""
    lane, warp = thread & 31, thread >> 5
    return {"thread": thread, "warp": warp, "warpgroup": warp >> 2, "lane": lane, "elected": int(lane == 0)}


class ThreadClass:
    """Threads of one role that behave identically: `weight` of them, represented by `env`."""

    __slots__ = ("role_index", "weight", "env", "warp_weights", "warpgroups", "index", "segments", "_units")

    def __init__(self, role_index, env):
        self.role_index = role_index
        self.weight = 0
        self.env = env  # builtins of the first (representative) thread
        self.warp_weights = {}  # warp -> threads of the class in it, in warp order
        self.warpgroups = set()
        self.index = -1
        self.segments = []  # (first thread, threads) of its members, in thread order
        self._units = {}

    @property
    def warps(self):
        return self.warp_weights.keys()

    def units(self, unit):
        """[(unit index, builtins of the unit's first member thread)] of the class's warpgroups ("warpgroup"),
        warps ("warp") or threads ("thread"), in order."""
        found = self._units.get(unit)
        if found is None:
            found, seen = [], set()
            for first, count in self.segments:
                for t in range(first, first + count) if unit == "thread" else (first,):
                    b = builtins_of(t)
                    u = t if unit == "thread" else b[unit]
                    if u not in seen:
                        seen.add(u)
                        found.append((u, b))
            self._units[unit] = found
        return found


def _safe(fn, env):
    try:
        return fn(env)
    except exprs.ExprError:
        return None


class _Cond:
    """A branch condition compiled for partial evaluation over a thread's builtins."""

    def __init__(self, expr, depth=0):
        b = expr.binary if expr.WhichOneof("kind") == "binary" else None
        self.op = None
        if b is not None and b.op in (exprs.OP.BINARY_OP_AND, exprs.OP.BINARY_OP_OR) and depth <= exprs.MAX_DEPTH:
            self.op = "and" if b.op == exprs.OP.BINARY_OP_AND else "or"
            self.lhs, self.rhs = _Cond(b.lhs, depth + 1), _Cond(b.rhs, depth + 1)
            return
        names = exprs.names(expr)
        self.named = sorted(names & THREAD)
        self.builtin_only = bool(self.named) and names <= THREAD
        self.fn = exprs.compile_expr(expr) if self.builtin_only else None
        self.id = expr.SerializeToString()

    def residual(self, env):
        """True, False, or a hashable stand-in for what the condition still depends on."""
        if self.op is None:
            if self.builtin_only:
                try:  # (_safe, inline: role_classes asks this of every thread)
                    return bool(self.fn(env))
                except exprs.ExprError:
                    return "undefined"
            return (self.id, tuple(env[n] for n in self.named))
        lhs, rhs = self.lhs.residual(env), self.rhs.residual(env)
        absorbing = self.op == "or"  # True absorbs an or, False an and
        if lhs is absorbing or rhs is absorbing:
            return absorbing
        if lhs is (not absorbing):
            return rhs
        if rhs is (not absorbing):
            return lhs
        return (self.op, lhs, rhs)


class _Key:
    """How to tell two threads' classes apart (see the module docstring)."""

    def __init__(self, conds, values):
        seen, self.conds, named = set(), [], set()
        for cond in conds:
            text = cond.SerializeToString()
            if text not in seen and exprs.names(cond) & THREAD:
                seen.add(text)
                self.conds.append(_Cond(cond))
        for value in values:
            named |= exprs.names(value) & THREAD
        self.named = sorted(named)
        # Lane-level builtins force a per-thread partition; otherwise a warp's lanes 1..31 agree.
        self.per_thread = bool({"thread", "lane"} & named) or any(
            {"thread", "lane"} & exprs.names(c) for c in conds
        )

    def of(self, env):
        return tuple([c.residual(env) for c in self.conds] + [env[n] for n in self.named])


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
        c.warp_weights[env["warp"]] = c.warp_weights.get(env["warp"], 0) + weight
        c.warpgroups.add(env["warpgroup"])
        c.segments.append((thread, weight))

    if key.per_thread:
        for t in range(threads):
            add(t, 1)
    else:  # only warp-level builtins and `elected` matter: lane 0 stands for itself, lane 1 for 31 lanes
        for w in range(threads // 32):
            add(32 * w, 1)
            add(32 * w + 1, 31)
    return list(classes.values())


def executing_threads(threads, conds, env=None):
    """How many of a role's `threads` threads run an op enclosed by `conds` ((Expr, taken arm is then), ...).

    With `env` binding the other names the conditions mention (loop variables,
    symbols), the exact count (a condition without a value counts as not
    taken). Without it, the most threads that can run it: conditions are
    partially evaluated with each thread's builtins and what remains unknown
    counts as satisfiable.
    """
    if env is not None:
        compiled = [(exprs.compile_expr(c), taken) for c, taken in conds]
        count = 0
        for t in range(threads):
            scope = dict(env)
            scope.update(builtins_of(t))
            if all(bool(_safe(fn, scope)) == taken for fn, taken in compiled):
                count += 1
        return count
    partial = [(_Cond(c), taken) for c, taken in conds]
    return sum(
        1 for t in range(threads)
        if all(_may_be(c.residual(builtins_of(t)), taken) for c, taken in partial)
    )


def _may_be(residual, taken):
    return residual == taken if isinstance(residual, bool) else residual != "undefined"

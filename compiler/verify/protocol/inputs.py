"""Concrete values for a kernel's shape symbols: valid inputs to model-check the protocol on.

`Binder.base()` finds the smallest valid value of every symbol (within
[min, max], a multiple of every `S % d == 0` the contract states, satisfying
all constraints). `Binder.scenarios(T)` then derives, for t = 1 .. T, an
input on which every loop whose trip count depends on a symbol runs t trips
(or as close to t as the contract allows): the loops are visited in program
order and each adjusts the first symbol of its bounds not yet adjusted.
Scalar params are bound to 1; block indices to 0 (the model runs block 0); a
persistent launch is modelled with one block walking every tile.
"""

import itertools

from cake.ir.v1 import ir_pb2

from compiler.verify import exprs

# Values of one symbol tried before giving up (the symbol's range can be 2^31 wide).
MAX_CANDIDATES = 4096
# Combinations tried when constraints relate several symbols.
MAX_COMBINATIONS = 512
# Values of a symbol tried when aiming a loop at a trip count.
MAX_AIMED = 256
# Consecutive values that break a multi-symbol constraint after a valid one end the aiming: the valid
# values of one symbol, the others fixed, form an interval under the relations contracts state (KP >= K).
MAX_MISSES = 16


class _Zero(dict):
    """An environment where names nobody bound read as 0 (enclosing loop variables, builtins)."""

    def __missing__(self, key):
        return 0


def _holds(fn, env):
    try:
        return bool(fn(env))
    except exprs.ExprError:
        return False


class Binder:
    """Finds valid symbol values for a Context's kernel."""

    def __init__(self, ctx):
        self.ctx = ctx
        contract = ctx.kernel.contract
        self.symbols = {s.name: s for s in contract.symbols}
        self.single, self.multi = {}, []
        self.unknown = False  # a constraint names something that is no symbol: nothing can be proved
        steps = {}
        for c in contract.constraints:
            ns = exprs.names(c.expr)
            if not ns <= set(self.symbols):
                self.unknown = True
                continue
            fn = exprs.compile_expr(c.expr)
            if len(ns) == 1:
                self.single.setdefault(next(iter(ns)), []).append(fn)
            else:
                self.multi.append((fn, ns))
            for part in exprs.conjuncts(c.expr):
                fact = exprs.modulus_fact(part)
                if fact:
                    name, d = fact
                    old = steps.get(name, 1)
                    steps[name] = old * d // _gcd(old, d)
        self.steps = steps
        self._cache = {}
        self._scenarios = {}

    def candidates(self, name):
        """Valid values of one symbol in increasing order (single-symbol constraints only), found lazily."""
        found = self._cache.get(name)
        if found is None:
            found = self._cache[name] = _Candidates(self.symbols[name], self.single.get(name, ()), self.steps.get(name, 1))
        return found

    def satisfies(self, env):
        """Whether env satisfies every multi-symbol constraint."""
        return all(_holds(fn, env) for fn, _ in self.multi)

    def base(self):
        """The smallest valid value of every symbol (name -> int), or None when none was found."""
        if self.unknown:
            return None
        env = {}
        for name in self.symbols:
            values = self.candidates(name).first(1)
            if not values:
                return None
            env[name] = values[0]
        if self.satisfies(env):
            return env
        related = sorted(set().union(*(ns for _, ns in self.multi)))
        pools = [self.candidates(n).first(4) for n in related]
        for combo in itertools.islice(itertools.product(*pools), MAX_COMBINATIONS):
            trial = dict(env, **dict(zip(related, combo)))
            if self.satisfies(trial):
                return trial
        return None

    def environment(self, symbols):
        """A full model environment: symbols, scalar params (1), block indices (0) and grid sizes."""
        env = dict(symbols)
        for p in self.ctx.kernel.params:
            if p.kind == ir_pb2.PARAM_KIND_SCALAR and p.name not in env:
                env[p.name] = 1
        for b in ("block.x", "block.y", "block.z", "cluster.rank"):
            env[b] = 0
        launch = self.ctx.kernel.launch
        for i, axis in enumerate("xyz"):
            size = 1
            if not launch.persistent and i < len(launch.grid):
                try:
                    size = max(1, exprs.evaluate(launch.grid[i], env))
                except exprs.ExprError:
                    size = 1
            env["grid." + axis] = size
        return env

    def scenarios(self, max_trips):
        """[(t, env)] for t = 1 .. max_trips: inputs on which the symbolic loops run t trips; distinct envs only."""
        if max_trips not in self._scenarios:
            self._scenarios[max_trips] = self._derive(max_trips)
        return self._scenarios[max_trips]

    def _derive(self, max_trips):
        base = self.base()
        if base is None:
            return []
        loops = [s.msg for s in self.ctx.sites("loop")]
        out, seen = [], set()
        for t in range(1, max_trips + 1):
            env = dict(base)
            adjusted = set()
            for loop in loops:
                self._aim(loop, t, env, adjusted)
            full = self.environment(env)
            key = tuple(sorted(full.items()))
            if key not in seen:
                seen.add(key)
                out.append((t, full))
        return out

    def _aim(self, loop, t, env, adjusted):
        bounds = [loop.start, loop.end] + ([loop.step] if loop.HasField("step") else [])
        free = set()
        for b in bounds:
            free |= exprs.names(b)
        free = sorted(
            n for n in free & set(self.symbols) if n not in adjusted and not self.symbols[n].HasField("value")
        )
        if not free:
            return
        name = free[0]
        adjusted.add(name)
        best, misses = None, 0
        for v in itertools.islice(self.candidates(name), MAX_AIMED):
            trial = dict(env)
            trial[name] = v
            if not self.satisfies(trial):
                misses += 1
                if best is not None and misses >= MAX_MISSES:
                    break
                continue
            trips = loop_trips(loop, self.environment(trial))
            best, misses = v, 0
            if trips >= t:
                break
        if best is not None:
            env[name] = best


class _Candidates:
    """The valid values of one symbol, scanned on demand: index and iterate it like a list."""

    def __init__(self, symbol, constraints, step):
        self.values = []
        self.constraints = constraints
        self.name = symbol.name
        if symbol.HasField("value"):
            self.next, self.last, self.step, self.left = symbol.value, symbol.value, 1, 1
        else:
            self.next, self.last, self.step = -(-symbol.min // step) * step, symbol.max, step
            self.left = MAX_CANDIDATES

    def _more(self):
        while self.left > 0 and self.next <= self.last:
            v = self.next
            self.next += self.step
            self.left -= 1
            if all(_holds(fn, {self.name: v}) for fn in self.constraints):
                self.values.append(v)
                return True
        return False

    def __iter__(self):
        i = 0
        while i < len(self.values) or self._more():
            yield self.values[i]
            i += 1

    def first(self, n):
        """Up to the n smallest valid values."""
        while len(self.values) < n and self._more():
            pass
        return self.values[:n]


def loop_trips(loop, env):
    """Trips of a loop under env (enclosing loop variables read as 0); 0 when the bounds have no value."""
    scope = _Zero(env)
    try:
        start = exprs.evaluate(loop.start, scope)
        end = exprs.evaluate(loop.end, scope)
        step = exprs.evaluate(loop.step, scope) if loop.HasField("step") else 1
    except exprs.ExprError:
        return 0
    if loop.kind == ir_pb2.LOOP_KIND_PERSISTENT:
        step = scope["grid.x"] or 1
    if step <= 0:
        return 0
    return max(0, -(-(end - start) // step))


def _gcd(a, b):
    while b:
        a, b = b, a % b
    return abs(a) or 1

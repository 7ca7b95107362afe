"""Concrete values for a kernel's shape symbols: valid inputs to model-check the protocol on.

`Binder.base()` finds the smallest valid value of every symbol (within
[min, max], a multiple of every `S % d == 0` the contract states, satisfying
all constraints). `Binder.scenarios(T)` then derives, for t = 1 .. T, an
input on which every loop whose trip count depends on a symbol runs t trips,
a loop nested in another one trip, and two in one more input after t = 2, then
one input with the outer loops at one trip and the nested ones at T (or as
close as the contract allows): the loops are visited in program order and
each adjusts the first symbol of its bounds not yet adjusted; symbols a
constraint relates to it follow (KP >= K moves K along with KP).
Scalar params are bound to 1; block indices to 0 (the model runs block 0); a
persistent launch is modelled with one block walking every tile.
`Binder.spread(t)` is an input on which each symbol of a loop bound or grid
dimension multiplies its loop's trips (tiles) or its dimension's blocks by t:
the outputs check (outputs.py) walks every block of it.
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
        self._aims = {}  # (t, nested) -> the symbols _aimed found: scenarios(3) and scenarios(2S + 1) share them
        self._tried = {}  # (loop path, env, adjusted symbols) -> the values _aim tried there (its `tried`)
        self._trips = {}  # (loop path, tiles) -> its compiled trip count
        launch = ctx.kernel.launch
        # The parts of `environment` that are the same for every input: scalar params, block indices, the grid.
        self._params = [p.name for p in ctx.kernel.params if p.kind == ir_pb2.PARAM_KIND_SCALAR]
        self._persistent = launch.persistent
        self._grid = [exprs.compile_expr(g) for g in launch.grid[:3]] if not launch.persistent else []
        self._grid_names = set().union(*(exprs.names(g) for g in launch.grid[:3])) if self._grid else set()

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

    def environment(self, symbols, persistent_blocks=1):
        """A full model environment: symbols, scalar params (1), block indices (0) and grid sizes (a persistent
        launch: `persistent_blocks` blocks along x)."""
        env = dict(symbols)
        for name in self._params:
            if name not in env:
                env[name] = 1
        env["block.x"] = env["block.y"] = env["block.z"] = env["cluster.rank"] = 0
        grid = self._grid
        for i, axis in enumerate(("grid.x", "grid.y", "grid.z")):
            size = persistent_blocks if self._persistent and i == 0 else 1
            if i < len(grid):
                try:
                    size = max(1, grid[i](env))
                except exprs.ExprError:
                    size = 1
            env[axis] = size
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
        out, seen = [], set()
        # Loops nested in another run one trip, and two in one more input after t = 2: rounds multiply, and two
        # trips show how one iteration's rounds follow the last's. One last input runs the outer loops once and
        # the nested ones max_trips times: a ring lapped inside one outer iteration (consumers that take turns
        # on its rounds wrap it there, where nothing orders them through the outer loop's own barriers).
        for t, nested in [(1, 1), (2, 1), (2, 2)] + [(t, 1) for t in range(3, max_trips + 1)] + [(1, max_trips)]:
            if t > max_trips:
                continue
            aimed = self._aims.get((t, nested))
            if aimed is None:
                aimed = self._aims[t, nested] = self._aimed(base, t, nested)
            full = self.environment(aimed)
            key = tuple(sorted(full.items()))
            if key not in seen:
                seen.add(key)
                out.append((t, full))
        return out

    def spread(self, t):
        """Symbols (name -> int) on which every symbol of a loop bound or grid dimension multiplies that loop's
        trips (a persistent loop's tiles) or that dimension's blocks by t, as near as the contract allows: each
        dimension of the work has t tiles. None without a valid input."""
        base = self.base()
        if base is None:
            return None
        env, adjusted = dict(base), set()
        launch = self.ctx.kernel.launch
        for site in self.ctx.sites("loop"):
            for name in self._free(_bounds(site.msg), adjusted):
                trips = self.trips(site, tiles=True)
                before = trips(self.environment(env))
                adjusted.add(name)
                self._gallop(name, trips, t * max(1, before), env, adjusted)
        for g in launch.grid if not launch.persistent else ():
            for name in self._free([g], adjusted):
                before = _value(g, self.environment(env))
                adjusted.add(name)
                self._gallop(name, lambda e, g=g: _value(g, e), t * max(1, before), env, adjusted)
        return env

    def _gallop(self, name, measure, t, env, adjusted):
        """Raise symbol `name` of env to (about) the smallest valid value with measure(environment) >= t, trying
        the symbol's first valid value plus 1, 2, 4, ... steps and then halving the last interval: its range
        can be 2^31 wide."""
        first = self.candidates(name).first(1)
        if not first:
            return
        sym, step = self.symbols[name], self.steps.get(name, 1)
        unrelated = self._unrelated(name, env)

        def reaches(v):  # None: not a valid value; else whether it reaches t
            if v > sym.max or not all(_holds(fn, {name: v}) for fn in self.single.get(name, ())):
                return None
            trial = dict(env, **{name: v}) if unrelated else self._repair(dict(env, **{name: v}), adjusted)
            return None if trial is None else measure(self.environment(trial)) >= t

        low, high = first[0], None
        for i in range(63):
            v = first[0] + step * ((1 << i) - 1)
            if v > sym.max:
                break
            hit = reaches(v)
            if hit:
                high = v
                break
            if hit is False:
                low = v
        if high is None:
            return
        while high - low > step:  # the smallest multiple of the step that still reaches t
            mid = low + (high - low) // (2 * step) * step
            hit = reaches(mid)
            if hit:
                high = mid
            elif hit is False:
                low = mid
            else:
                break
        best = self._repair(dict(env, **{name: high}), adjusted)
        adjusted |= {n for n in best if best[n] != env[n]}
        env.update(best)

    def _aimed(self, base, t, nested):
        env, adjusted = dict(base), set()
        for site in self.ctx.sites("loop"):
            free = self._free(_bounds(site.msg), adjusted)
            if free:
                adjusted.add(free[0])
                trips = nested if site.loop_vars else t
                tried = self._tried.setdefault((site.path, tuple(sorted(env.items())), frozenset(adjusted)), {})
                self._aim(free[0], self.trips(site), trips, env, adjusted, tried)
        return env

    def trips(self, site, tiles=False):
        """The trip count of loop `site` as a function of an environment (loop_trips, compiled once)."""
        fn = self._trips.get((site.path, tiles))
        if fn is None:
            fn = self._trips[site.path, tiles] = trips_fn(site.msg, tiles)
        return fn

    def _free(self, exprs_, adjusted):
        """The symbols `exprs_` read that are neither specialized nor adjusted yet, sorted."""
        free = set()
        for e in exprs_:
            free |= exprs.names(e)
        return sorted(n for n in free & set(self.symbols) if n not in adjusted and not self.symbols[n].HasField("value"))

    def _aim(self, name, measure, t, env, adjusted, tried):
        """Raise symbol `name` of env through its valid values until measure(environment) >= t (symbols related
        to it by a constraint follow, _repair). `tried` keeps value -> (trial, its measure) for this env and
        `adjusted`: aiming the same loop at the next trip count passes through the same values."""
        best, misses = None, 0
        unrelated = self._unrelated(name, env)
        # Where no other symbol follows `name` and the grid does not read it, the trials' environments differ only
        # in it: build one and set `name` in it for each trial.
        scope = _Zero(self.environment(env)) if unrelated and name not in self._grid_names else None
        for v in itertools.islice(self.candidates(name), MAX_AIMED):
            hit = tried.get(v)
            if hit is None:
                if scope is not None:
                    scope[name] = v
                    hit = (dict(env, **{name: v}), measure.scoped(scope))
                else:
                    trial = dict(env, **{name: v}) if unrelated else self._repair(dict(env, **{name: v}),
                                                                                  adjusted | {name})
                    hit = (trial, None if trial is None else measure(self.environment(trial)))
                tried[v] = hit
            trial, reached = hit
            if trial is None:
                misses += 1
                if best is not None and misses >= MAX_MISSES:
                    break
                continue
            best, misses = trial, 0
            if reached >= t:
                break
        if best is not None:
            adjusted |= {n for n in best if best[n] != env[n]}
            env.update(best)

    def _unrelated(self, name, env):
        """Whether no multi-symbol constraint names `name` and env satisfies them all: then every value of `name`
        does, and _repair would return each trial as it is."""
        return all(name not in ns for _, ns in self.multi) and self.satisfies(env)

    def _repair(self, trial, fixed):
        """`trial` with symbols outside `fixed` raised (each through its valid values) until every multi-symbol
        constraint holds (KP >= K && KP < K + 128 moves K along with KP), or None."""
        for fn, ns in self.multi:
            for other in sorted(ns - fixed):
                if _holds(fn, trial):
                    break
                if self.symbols[other].HasField("value"):
                    continue
                # Relations such as KP >= K hold near the moved symbol's value: try there first, then upwards.
                near = [v for v in (max(trial[n] for n in fixed if n in trial),) if v >= trial[other]]
                for v in itertools.chain(near, itertools.islice(self.candidates(other), MAX_AIMED)):
                    if v >= trial[other] and _holds(fn, dict(trial, **{other: v})):
                        trial = dict(trial, **{other: v})
                        break
        return trial if self.satisfies(trial) else None


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


def _bounds(loop):
    return [loop.start, loop.end] + ([loop.step] if loop.HasField("step") else [])


def loop_trips(loop, env, tiles=False):
    """Trips of a loop under env (enclosing loop variables read as 0); 0 when the bounds have no value.
    With `tiles`, a persistent loop counts the tiles all blocks walk together."""
    return trips_fn(loop, tiles)(env)


def trips_fn(loop, tiles=False):
    """loop_trips(loop, env, tiles) as a function of env, its bounds compiled once."""
    start_fn, end_fn = exprs.compile_expr(loop.start), exprs.compile_expr(loop.end)
    step_fn = exprs.compile_expr(loop.step) if loop.HasField("step") else None
    persistent = loop.kind == ir_pb2.LOOP_KIND_PERSISTENT

    def trips(env):
        return scoped(_Zero(env))

    def scoped(scope):
        try:
            start, end = start_fn(scope), end_fn(scope)
            step = step_fn(scope) if step_fn is not None else 1
        except exprs.ExprError:
            return 0
        if persistent:
            step = 1 if tiles else scope["grid.x"] or 1
        if step <= 0:
            return 0
        return max(0, -(-(end - start) // step))

    trips.scoped = scoped  # on a _Zero scope already built
    return trips


def _value(expr, env):
    try:
        return exprs.evaluate(expr, env)
    except exprs.ExprError:
        return 0


def _gcd(a, b):
    while b:
        a, b = b, a % b
    return abs(a) or 1

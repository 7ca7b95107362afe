"""The task registry: what the agent optimizes, keyed by kernel contract and loaded from data files.

agent/tasks/contracts/<key>.json declares one kernel contract: what it computes (the
IR contract's reference and metric), the kernel params a candidate must keep (name,
dtype, access, rank) and the computation each output must come from (`requires`: the
op kinds and input params its data flow must hold: agent/contract_gate.py), how the
runtime checks and times its kernels (`runtime`: shapes -> runtime.contract.Contract;
`binding`: how a compiled kernel is launched, beside the kernel), the peers to time
(`from`: a function returning {name: launch}), the seed families that implement
it (a builder in kernels/ and its parameter space: agent/seeds.py) and, where the
binding derives symbols the task's shapes do not give (a padded length, how a
database splits into ranges), the function that derives them (`symbols`), so the
cost model sees the launch the binding makes.

agent/tasks/<name>.json declares one task: its contract (a key), its seed (family and
params), the builder params the task fixes, the shapes it is timed at, the further
shapes the oracle checks, the target and cost-model device, and the budget. Adding a
task is one such file; adding a kernel is a contract file and, at most, its binding.
Everything named "package.module:function" is resolved only where it runs (worker
processes), so loading the registry imports no kernel code.
"""

import dataclasses
import glob
import json
import os

TASK_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tasks")
CONTRACT_DIR = os.path.join(TASK_DIR, "contracts")
DEFAULT_TASK = "kmeans-assign"


class RegistryError(ValueError):
    """A task or contract file is malformed; the message names the file and the problem."""


@dataclasses.dataclass(frozen=True)
class Budget:
    """When the search stops: whichever limit comes first (0: no limit of that kind)."""

    evaluations: int = 300  # candidates given a fitness (predicted or measured)
    wall_s: float = 75.0  # seconds of search, not counting set-up and the report
    device_s: float = 0.0  # seconds of GPU work (compiles excluded), measured runs only
    stale_generations: int = 4  # stop after this many generations without a new candidate


@dataclasses.dataclass(frozen=True)
class ParamSpec:
    """A kernel param a contract requires: its element type, access and rank."""

    dtype: str
    access: str
    rank: int


@dataclasses.dataclass(frozen=True)
class Requirement:
    """What an output's data must come from: op kinds (`kind` or `kind:op`) and input params."""

    ops: tuple
    inputs: tuple


@dataclasses.dataclass(frozen=True)
class Peer:
    name: str
    source: str  # "package.module:function" returning {name: launch(outputs, inputs)} for what imports


@dataclasses.dataclass(frozen=True)
class KernelContract:
    key: str
    doc: str
    reference: str  # the IR contract's reference (kernels.<k>.reference.<fn>)
    metric: str  # the IR contract's metric, by short name
    runtime: str  # "package.module:function": shapes -> runtime.contract.Contract
    binding: str  # "package.module:function": (runner, options) -> launch(outputs, inputs)
    params: dict  # name -> ParamSpec
    requires: dict  # output param -> Requirement
    peers: tuple  # Peer
    families: dict  # family name -> its data (agent/seeds.py builds Family from it)
    path: str
    # "package.module:function": (shapes, tile_rows) -> {symbol: value} of the symbols the binding derives
    # (padded lengths, database splits) from a shape and the rows of each input's tile (ir_edit.tile_rows);
    # "" when the task's shapes bind every symbol.
    symbols: str = ""


@dataclasses.dataclass(frozen=True)
class Task:
    name: str
    family: str
    seed_params: dict
    fixed: dict  # builder params fixed by the task (feature width, dtype)
    shapes: dict  # shape symbols the kernel is timed and predicted at
    check_shapes: tuple  # further shapes the oracle checks (satisfying every family member's constraints)
    target: str = "sm_90a"
    device: str = "sm_90a/H200"  # the cost model's device
    budget: Budget = Budget()
    batch: int = 6  # children proposed per generation
    measure_top: int = 2  # of those, how many (best predicted) are compiled and measured on a GPU
    prune_margin: float = 0.25  # never measure a child predicted this much slower than the best measured one
    contract: str = ""  # the kernel contract key (agent/tasks/contracts); "" in runs recorded before it existed
    doc: str = ""

    def to_json(self):
        return json.loads(json.dumps(dataclasses.asdict(self)))

    @classmethod
    def from_json(cls, data):
        data = dict(data)
        data["budget"] = Budget(**data["budget"])
        data["check_shapes"] = tuple(data["check_shapes"])
        return cls(**data)

    def with_budget(self, **changes):
        return dataclasses.replace(self, budget=dataclasses.replace(self.budget, **changes))

    @property
    def kernel_contract(self):
        """The KernelContract this task's candidates must keep (older runs: their family's)."""
        if self.contract:
            return contract(self.contract)
        from agent import seeds

        return contract(seeds.family(self.family).contract_key)

    @property
    def all_shapes(self):
        """The timed shapes, then the further checked ones: what the oracle runs and the contract must admit."""
        return [dict(self.shapes)] + [dict(s) for s in self.check_shapes]


def _read(path):
    try:
        with open(path) as f:
            data = json.load(f)
    except (OSError, ValueError) as e:
        raise RegistryError("%s: %s" % (path, e)) from None
    if not isinstance(data, dict):
        raise RegistryError("%s: a registry file holds one JSON object" % path)
    return data


def _need(data, path, key, kind):
    if key not in data:
        raise RegistryError("%s: missing %r" % (path, key))
    value = data[key]
    if not isinstance(value, kind):
        raise RegistryError("%s: %r must be a %s" % (path, key, kind.__name__ if isinstance(kind, type) else
                                                     " or ".join(k.__name__ for k in kind)))
    return value


def _ref(path, key, value):
    if not isinstance(value, str) or value.count(":") != 1 or not all(value.split(":")):
        raise RegistryError("%s: %r must be \"package.module:function\", not %r" % (path, key, value))
    return value


def load_contract(path):
    """The KernelContract in `path`; RegistryError naming the problem."""
    d = _read(path)
    key = _need(d, path, "key", str)
    if os.path.basename(path) != key + ".json":
        raise RegistryError("%s: contract %r must live in %s.json" % (path, key, key))
    params = {}
    for name, p in _need(d, path, "params", dict).items():
        if not isinstance(p, dict) or set(p) != {"dtype", "access", "rank"}:
            raise RegistryError("%s: param %r needs exactly dtype, access and rank" % (path, name))
        if p["access"] not in ("read", "write", "read_write"):
            raise RegistryError("%s: param %r has access %r (read, write, read_write)" % (path, name, p["access"]))
        params[name] = ParamSpec(p["dtype"], p["access"], int(p["rank"]))
    requires = {}
    for out, r in _need(d, path, "requires", dict).items():
        if out not in params or params[out].access == "read":
            raise RegistryError("%s: requires names %r, which is not an output param" % (path, out))
        unknown = [i for i in r.get("inputs", []) if i not in params]
        if unknown:
            raise RegistryError("%s: requirement of %r names unknown inputs %s" % (path, out, unknown))
        requires[out] = Requirement(tuple(r.get("ops", [])), tuple(r.get("inputs", [])))
    missing = [p for p, s in params.items() if s.access != "read" and p not in requires]
    if missing:
        raise RegistryError("%s: outputs %s have no requirement" % (path, missing))
    peers = tuple(Peer(_need(p, path, "name", str), _ref(path, "from", p.get("from")))
                  for p in _need(d, path, "peers", list))
    families = _need(d, path, "families", dict)
    for name, f in families.items():
        for k in ("builder", "space", "defaults"):
            if k not in f:
                raise RegistryError("%s: family %r misses %r" % (path, name, k))
        _ref(path, "builder", f["builder"])
        bad = [p for p, v in f["defaults"].items() if v not in f["space"].get(p, [v])]
        if bad:
            raise RegistryError("%s: family %r's defaults leave its space at %s" % (path, name, bad))
    symbols = _ref(path, "symbols", d["symbols"]) if "symbols" in d else ""
    return KernelContract(key, d.get("doc", ""), _need(d, path, "reference", str), _need(d, path, "metric", str),
                          _ref(path, "runtime", d.get("runtime")), _ref(path, "binding", d.get("binding")), params,
                          requires, peers, families, path, symbols)


def load_task(path, contracts):
    """The Task in `path` (its contract must be among `contracts`); RegistryError naming the problem."""
    d = _read(path)
    name = _need(d, path, "name", str)
    if os.path.basename(path) != name + ".json":
        raise RegistryError("%s: task %r must live in %s.json" % (path, name, name))
    key = _need(d, path, "contract", str)
    if key not in contracts:
        raise RegistryError("%s: unknown contract %r (known: %s)" % (path, key, ", ".join(sorted(contracts))))
    seed = _need(d, path, "seed", dict)
    family = seed.get("family")
    if family not in contracts[key].families:
        raise RegistryError("%s: seed family %r does not implement %r (its families: %s)" % (
            path, family, key, ", ".join(contracts[key].families)))
    budget = _need(d, path, "budget", dict)
    try:
        budget = Budget(**budget)
    except TypeError as e:
        raise RegistryError("%s: budget: %s" % (path, e)) from None
    known = {f.name for f in dataclasses.fields(Task)}
    extra = sorted(set(d) - known - {"seed"})
    if extra:
        raise RegistryError("%s: unknown fields %s" % (path, extra))
    fields = {k: v for k, v in d.items() if k in known and k not in ("budget", "family", "seed_params")}
    return Task(family=family, seed_params=dict(seed.get("params", {})), budget=budget,
                **dict(fields, check_shapes=tuple(_need(d, path, "check_shapes", list)),
                       shapes=_need(d, path, "shapes", dict), fixed=_need(d, path, "fixed", dict)))


def _load():
    contracts = {}
    for path in sorted(glob.glob(os.path.join(CONTRACT_DIR, "*.json"))):
        c = load_contract(path)
        contracts[c.key] = c
    tasks = {}
    for path in sorted(glob.glob(os.path.join(TASK_DIR, "*.json"))):
        t = load_task(path, contracts)
        tasks[t.name] = t
    return contracts, tasks


CONTRACTS, TASKS = _load()


def task(name):
    try:
        return TASKS[name]
    except KeyError:
        raise ValueError("unknown task %r (known: %s)" % (name, ", ".join(TASKS))) from None


def contract(key):
    """The KernelContract called `key`; ValueError listing the known ones."""
    try:
        return CONTRACTS[key]
    except KeyError:
        raise ValueError("unknown kernel contract %r (known: %s)" % (key, ", ".join(CONTRACTS))) from None


def for_kernel(kernel):
    """The KernelContract a kernel implements (its IR contract's reference and its params), or None."""
    names = {p.name for p in kernel.params}
    for c in CONTRACTS.values():
        if c.reference == kernel.contract.reference and set(c.params) == names:
            return c
    return None


def tasks_of(key):
    """The tasks of contract `key`, by name."""
    return {n: t for n, t in TASKS.items() if t.contract == key}

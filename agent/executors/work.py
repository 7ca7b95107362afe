"""The work an executor's workers do: propose, check and compile candidates, and measure them.

Everything here is a function of its inputs (IR bytes, genomes, random states) and of
a WorkerConfig, so the same job gives the same answer in a local process, a Ray actor
or the driver itself, whichever worker runs it and whenever: that is what keeps a
pipelined run deterministic. A worker builds its Context once from the config: the
knowledge files (a snapshot the driver took, written to a private directory), its
compiler port (in-process unless the run names a compiler service; verify and analyze
answers cached across runs, verify_cache.py) and the task.

Jobs (dicts in, dicts out, all picklable):
- propose: the first tactic of `order` that applies to the parent and makes a kernel not
  among the store's first `known_n` (known.py), resuming a walk
  (agent/authors/search.applicable) at a random state.
- check: verify + analyze (assess.check), and for a rejected candidate every repair
  child its diagnostics call for (the driver keeps the first ones it has not seen).
- compile: assess.build, with the repair children of a build error.
- measure (measurement workers, not CPU workers): assess.measure with the slot's evaluator.
"""

import contextlib
import dataclasses
import os
import random
import shutil
import tempfile

from cake.compiler.v1 import artifact_pb2
from cake.ir.v1 import ir_pb2

from agent import assess, repair as repair_mod, seeds, tactics as tactics_mod
from agent.authors.search import applicable
from agent.executors.known import KnownCopy
from agent.genome import Genome
from compiler.ir.hashing import ir_hash
from compiler.ir.text import print_kernel


@dataclasses.dataclass(frozen=True)
class WorkerConfig:
    """What every worker of a run needs, as plain data (it travels to processes and cluster nodes)."""

    task: dict  # Task.to_json()
    knowledge: dict  # {"base": files, "learned": files or None}: path relative to each directory -> bytes
    compiler: str = "in-process"  # the workers' port: "in-process", "grpc" (a service each) or "module:Class"
    compiler_address: str = None  # one compiler service every worker uses instead
    seed: int = 0
    max_repair_depth: int = 2
    check_cache: bool = True

    @staticmethod
    def snapshot(source):
        """The knowledge's files (its reviewed base and learned layer), to rebuild it wherever a worker runs."""
        from agent.learn import knowledge

        kb = knowledge.of(source)
        learned = kb.learned if kb.learned and os.path.isdir(kb.learned) else None
        return {"base": _files(kb.base), "learned": _files(learned) if learned else None}


class Context:
    """A worker's state for one config: knowledge, compiler port, task. Close it to stop the port."""

    def __init__(self, config):
        from agent import task as task_mod
        from agent.compiler_port import open_port
        from agent.learn import calibrate, outer
        from agent.repair import RepairMap
        from agent.tactics import load as load_tactics

        self.config = config
        self.task = task_mod.Task.from_json(config.task)
        self.family = seeds.family(self.task.family)
        from agent.learn import knowledge

        self._dir = tempfile.mkdtemp(prefix="cake-knowledge-")
        layers = {}
        for layer, files in config.knowledge.items():
            if files is None:
                continue
            layers[layer] = os.path.join(self._dir, layer)
            for rel, data in files.items():
                path = os.path.join(layers[layer], rel)
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with open(path, "wb") as f:
                    f.write(data)
        kb = knowledge.Knowledge(layers["base"], layers.get("learned"))
        self.tactics, _ = load_tactics(kb, self.task.family)  # the family's parameter moves, as evolve loads them
        self.repairs = RepairMap.load(kb)
        self._stack = contextlib.ExitStack()
        rules, calibration = outer.learned_rules(kb)["rules"], calibrate.current_data(kb)  # as data: request fields
        if ":" in config.compiler:  # a port factory by name ("package.module:function"): tests' lowering-only builds
            from runtime import names

            port = names.resolve(config.compiler)(rules, calibration)
        else:
            port = self._stack.enter_context(open_port(config.compiler, rules, calibration, config.compiler_address,
                                                       log=lambda _: None))
        if config.check_cache and not config.compiler_address:  # a remote service's version is not ours to key
            from agent.executors.verify_cache import CachedPort, CheckCache

            cache = CheckCache()
            self._stack.callback(cache.close)
            port = CachedPort(port, cache, context=_knowledge_digest(config.knowledge))
        self.port = port
        self.known = KnownCopy()

    def close(self):
        self._stack.close()
        shutil.rmtree(self._dir, ignore_errors=True)

    # -- jobs ---------------------------------------------------------------------------

    def propose(self, job):
        subject = tactics_mod.Subject(ir_pb2.Kernel.FromString(job["parent"]),
                                      Genome.from_json(job["genome"]) if job["genome"] else None)
        rng = random.Random()
        rng.setstate(job["rng"])
        self.known.update(job)
        prefix = job.get("known_n", 0)
        for pos, name, child in applicable(self.tactics, job["order"], subject, self.task.fixed, rng):
            h = ir_hash(child.kernel)
            if self.known.known(h, prefix):
                continue  # where the driver would resume the walk, with the same draws
            return {"pos": pos, "tactic": name, "child": candidate(child.kernel, child.genome, h), "rng": rng.getstate(),
                    "known_len": len(self.known)}
        return {"pos": None, "known_len": len(self.known)}

    def check(self, job):
        kernel = ir_pb2.Kernel.FromString(job["kernel"])
        out = assess.check(self.port, kernel, job["ir_hash"], self.family.analysis_shapes(self.task.shapes, kernel),
                           self.task.device, task=self.task)
        return {"outcome": out, "repairs": self._repairs(job, kernel, out) if out.status == "invalid" else []}

    def compile(self, job):
        kernel = ir_pb2.Kernel.FromString(job["kernel"])
        compiled, out = assess.build(self.port, kernel, job["ir_hash"])
        return {"compiled": compiled.SerializeToString() if compiled is not None else None, "outcome": out,
                "repairs": self._repairs(job, kernel, out) if compiled is None and out.errors else []}

    def run(self, kind, job):
        return {"propose": self.propose, "check": self.check, "compile": self.compile}[kind](job)

    def _repairs(self, job, kernel, out):
        """Every repair child the errors call for, distinct, in order (the driver picks the unseen ones)."""
        if job["depth"] >= self.config.max_repair_depth:
            return []
        subject = tactics_mod.Subject(kernel, Genome.from_json(job["genome"]) if job["genome"] else None)
        rng = random.Random(job["repair_seed"])
        found, seen = [], set()
        for name, child in repair_mod.children(self.repairs, self.tactics, subject, out.errors, self.task.fixed, rng):
            c = candidate(child.kernel, child.genome)
            if c["ir_hash"] not in seen:
                seen.add(c["ir_hash"])
                found.append(dict(c, tactic=name))
        return found


def candidate(kernel, genome, hash_=None):
    """A kernel as the driver records it: IR bytes, hash, text, genome."""
    return {"kernel": kernel.SerializeToString(), "ir_hash": hash_ or ir_hash(kernel), "ir_text": print_kernel(kernel),
            "genome": genome.to_json() if genome else None}


def measure(evaluator, binding, job):
    """A measurement slot's job: check and time one built candidate (an Outcome, `measured` or `failed`)."""
    compiled = artifact_pb2.CompiledKernel.FromString(job["compiled"])
    kernel = ir_pb2.Kernel.FromString(job["kernel"])
    return assess.measure(evaluator, compiled, kernel, job["ir_hash"], binding, job["label"], assess.Outcome("failed"))


def _files(directory):
    out = {}
    for dirpath, _, filenames in os.walk(directory):
        for name in filenames:
            path = os.path.join(dirpath, name)
            with open(path, "rb") as f:
                out[os.path.relpath(path, directory)] = f.read()
    return out


def _knowledge_digest(layers):
    import hashlib

    digest = hashlib.sha256()
    for layer in sorted(layers):
        for rel in sorted(layers[layer] or {}):
            digest.update(("%s/%s" % (layer, rel)).encode() + b"\0" + layers[layer][rel])
    return digest.hexdigest()


# -- local worker processes (runtime/pool.py) -----------------------------------------------

_CONTEXTS = {}


def _context(config_path):
    ctx = _CONTEXTS.get(config_path)
    if ctx is None:
        import pickle

        with open(config_path, "rb") as f:
            ctx = _CONTEXTS[config_path] = Context(pickle.load(f))
    return ctx


def run_in_process(payload):
    """The pool task of the local executor's CPU workers: {"config": path of a pickled WorkerConfig, "kind", "job"}."""
    return _context(payload["config"]).run(payload["kind"], payload["job"])


def warm(payload):
    """A worker's first task: its Context for {"config": path}, built before any job needs it."""
    _context(payload["config"])


@dataclasses.dataclass(frozen=True)
class Measurer:
    """How a measurement slot makes its evaluator: the GPU one (runtime/pool.py workers) or the test fake."""

    task: dict  # Task.to_json()
    fake: bool = False
    fake_delay_s: float = 0.0

    def evaluator(self, device=None, results_path=None):
        """An evaluator whose workers use `device` (an index into the visible GPUs; None: as inherited)."""
        from agent import task as task_mod

        task = task_mod.Task.from_json(self.task)
        if self.fake:
            from agent.measure.fake import FakeEvaluator

            return FakeEvaluator(task.shapes, task.device, delay_s=self.fake_delay_s)
        from agent.measure.gpu import GpuEvaluator

        env = None if device is None else {"CUDA_VISIBLE_DEVICES": visible_devices()[device]}
        return GpuEvaluator(task, seeds.family(task.family), results_path, env=env)


def visible_devices(count=64):
    """The GPU ids this process may use, as CUDA_VISIBLE_DEVICES names them (all when it is unset)."""
    names = os.environ.get("CUDA_VISIBLE_DEVICES")
    return [n.strip() for n in names.split(",") if n.strip()] if names else [str(i) for i in range(count)]

"""The Ray executor: CPU actors for proposing, checking and compiling, one measurement actor per GPU.

`ray.init()` starts a cluster on this machine unless `address` names one (a cluster
whose nodes can import CAKE: the same checkout or the wheel, with the generated
protos). CPU actors (num_cpus=1) each hold a compiler port and the run's knowledge
(work.Context); measurement actors declare num_gpus=1, so Ray pins each to its own
GPU, and each measures in its own runtime/pool.py worker, which survives faulting,
hanging and crashing kernels as on one machine. Every actor restarts when its
process or node dies (max_restarts=-1); the jobs it held come back as lost and are
sent again (at most MAX_TRIES times in all), so a failure costs only the candidates
in flight, and the driver, which alone writes the run store, records nothing twice.
Measurement records come back to the driver, which appends them to evaluations.jsonl.

Ray's temporary directory holds the sockets of its processes, whose paths must stay
under the AF_UNIX limit: under `bazel test` it lives in TEST_TMPDIR, reached through a
short link in /tmp when that path is too long (removed at close).
"""

import logging
import os
import sys
import tempfile
import time

from agent.executors import work
from agent.executors.base import Executor, Failed

MAX_TRIES = 3
IN_FLIGHT_PER_ACTOR = 2  # one running, one waiting in the actor's queue, so it never idles between jobs
MAX_TEMP_DIR = 40  # Ray adds ~65 characters (session_<date>_<pid>/sockets/plasma_store); AF_UNIX allows 107


class _CpuWorker:
    def __init__(self, config):
        self.ctx = work.Context(config)

    def run(self, kind, job):
        return self.ctx.run(kind, job)

    def ping(self):
        return True


class _GpuWorker:
    def __init__(self, measurer, binding):
        self.evaluator = measurer.evaluator()  # Ray set CUDA_VISIBLE_DEVICES for this actor; its workers inherit it
        self.binding = binding

    def measure(self, job):
        return work.measure(self.evaluator, self.binding, job)

    def ping(self):
        return True


def temp_dir():
    """(Ray's temp dir or None for Ray's default, a link to remove at close or None)."""
    base = os.environ.get("TEST_TMPDIR")
    if not base:
        return None, None
    real = os.path.join(base, "ray")
    os.makedirs(real, exist_ok=True)
    if len(real) <= MAX_TEMP_DIR:
        return real, None
    link = os.path.join(tempfile.mkdtemp(prefix="cr", dir="/tmp"), "r")
    os.symlink(real, link)
    return link, link


def init(address=None, num_cpus=None, num_gpus=None):
    """Connect to `address`, or start a cluster here; the link to remove after ray.shutdown() (or None)."""
    import ray

    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # a run reports nothing anywhere
    env = {"env_vars": {"PYTHONPATH": os.pathsep.join(p for p in sys.path if p and os.path.isdir(p))}}
    if address:
        ray.init(address=address, runtime_env=env, logging_level=logging.WARNING, log_to_driver=False)
        return None
    path, link = temp_dir()
    ray.init(num_cpus=num_cpus, num_gpus=num_gpus, include_dashboard=False, runtime_env=env, _temp_dir=path,
             logging_level=logging.WARNING, log_to_driver=False)
    return link


def shutdown(link):
    import ray

    ray.shutdown()
    if link:
        os.unlink(link)
        os.rmdir(os.path.dirname(link))


class RayExecutor(Executor):
    name = "ray"
    records_measurements = False

    def __init__(self, config, cpu_workers=None, measurer=None, gpus=0, binding=None, address=None):
        import ray

        self._link, self._started = None, not ray.is_initialized()
        if self._started:
            self._link = init(address, num_cpus=cpu_workers)
        resources = ray.cluster_resources()
        cpu_workers = cpu_workers or max(1, int(resources.get("CPU", 1)))
        if measurer is not None:
            gpus = gpus or int(resources.get("GPU", 0))
            if gpus > resources.get("GPU", 0):
                self.close()
                raise RuntimeError("%d measurement actors asked for, but the Ray cluster has %g GPUs"
                                   % (gpus, resources.get("GPU", 0)))
        else:
            gpus = 0
        super().__init__(cpu_workers, gpus)
        cpu = ray.remote(num_cpus=1, max_restarts=-1, max_task_retries=0)(_CpuWorker)
        gpu = ray.remote(num_cpus=0, num_gpus=1, max_restarts=-1, max_task_retries=0)(_GpuWorker)
        self._actors = {"cpu": [cpu.remote(config) for _ in range(cpu_workers)],
                        "gpu": [gpu.remote(measurer, binding) for _ in range(gpus)]}
        self._load = {"cpu": [0] * cpu_workers, "gpu": [0] * gpus}
        self._sent = {"cpu": [0] * cpu_workers, "gpu": [0] * gpus}  # jobs given to each actor so far
        self._queued = {"cpu": [], "gpu": []}
        self._refs = {}  # ObjectRef -> (ticket, kind, payload, tries, pool, actor index)
        self._pings = {}  # ObjectRef -> (pool, actor index) of an actor that lost a job, until it answers again

    def actors(self, pool):
        """The actors of "cpu" or "gpu" (tests kill them)."""
        return list(self._actors[pool])

    def _send(self, ticket, kind, payload):
        self._queued["gpu" if kind == "measure" else "cpu"].append((ticket, kind, payload, 1))
        self._dispatch()

    def _dispatch(self):
        for pool, queued in self._queued.items():
            load = self._load[pool]
            down = {i for p, i in self._pings.values() if p == pool}
            while queued:
                free = [i for i in range(len(load)) if i not in down and load[i] < IN_FLIGHT_PER_ACTOR]
                if not free:
                    break
                # The least loaded; among idle ones, the one given the fewest jobs: one job at a time (a
                # generation measuring one candidate) still goes round every GPU, not always to the first.
                i = min(free, key=lambda j: (load[j], self._sent[pool][j]))
                self._sent[pool][i] += 1
                ticket, kind, payload, tries = queued.pop(0)
                actor = self._actors[pool][i]
                ref = (actor.measure.remote(payload) if pool == "gpu"
                       else actor.run.remote(kind, self.known.attach(i, payload)))
                load[i] += 1
                self._refs[ref] = (ticket, kind, payload, tries, pool, i)

    def _receive(self, timeout):
        import ray
        from ray import exceptions

        self._dispatch()
        waiting = list(self._refs) + list(self._pings)
        if not waiting:
            if timeout:
                time.sleep(min(timeout, 0.05))
            return []
        ready, _ = ray.wait(waiting, num_returns=1, timeout=timeout)
        if ready:
            ready, _ = ray.wait(waiting, num_returns=len(waiting), timeout=0)
        out = []
        for ref in ready:
            if ref in self._pings:
                self._answered(ref)
                continue
            ticket, kind, payload, tries, pool, i = self._refs.pop(ref)
            self._load[pool][i] -= 1
            try:
                result = ray.get(ref)
                if pool == "cpu":
                    self.known.replied(i, result)
                out.append((ticket, result))
            except (exceptions.RayActorError, exceptions.ActorUnavailableError, exceptions.ObjectLostError,
                    exceptions.WorkerCrashedError, exceptions.NodeDiedError) as e:
                if pool == "cpu":
                    self.known.lost(i)
                if tries < MAX_TRIES:  # lost with its actor or node: the restarted actor (or another) does it again
                    self._queued[pool].append((ticket, kind, payload, tries + 1))
                    if (pool, i) not in self._pings.values():
                        self._pings[self._actors[pool][i].ping.remote()] = (pool, i)
                else:
                    out.append((ticket, Failed("crash", "lost %d times with its worker: %s" % (tries, e))))
            except exceptions.RayTaskError as e:
                out.append((ticket, Failed("exception", str(e.cause if e.cause is not None else e))))
        self._dispatch()
        return out

    def _answered(self, ref):
        """A ping of an actor that lost a job: back in service once it answers (it has restarted), else ask again."""
        import ray

        pool, i = self._pings.pop(ref)
        try:
            ray.get(ref)
        except Exception:  # noqa: BLE001  (still restarting, or its node is gone: Ray brings it up elsewhere)
            time.sleep(0.2)
            self._pings[self._actors[pool][i].ping.remote()] = (pool, i)

    def close(self):
        import ray

        for actors in getattr(self, "_actors", {}).values():
            for actor in actors:
                ray.kill(actor)
        if self._started:
            shutdown(self._link)
            self._started = False

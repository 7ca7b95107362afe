"""Measurement as a service: a compiled kernel checked against a named task's contract, then timed,
in an isolated worker. What the compiler service's Measure RPC and the MCP server's measure tool run.

    measurer = Measurer({"gemm_bf16": Task(contract=..., binding=..., shapes=(...))})
    m = measurer.measure(compiled, "gemm_bf16")        # a Measurement: verdict, timing, machine record
    measurer.close()

A Task names, as "package.module:function", the contract (contract(shapes) -> Contract)
and the binding (binding(runner, options) -> launch(outputs, inputs), where runner is
runtime.compiled's CompiledKernelRunner), and the shapes it is checked at (the first
is timed). Only registered tasks run: a remote caller cannot name code to import.
Workers are runtime/pool.py's (spawned, time-limited, replaced after faults, hangs and
crashes), one job at a time; the parent never touches the GPU.
"""

import dataclasses
import threading
import typing

from runtime import failures, names, pool as pool_

WORKER_TASK = "runtime.measure:run"
INITIALIZER = "runtime.evaluate:init_worker"
DEFAULT_TIMING = {"warmup": 5, "reps": 30, "flush_factor": 2.0, "input_sets": 2}


@dataclasses.dataclass(frozen=True)
class Task:
    """A kind of kernel the service can measure."""

    contract: str  # "package.module:function": function(shapes) -> runtime.contract.Contract
    binding: str  # "package.module:function": function(runner, options) -> launch(outputs, inputs)
    shapes: tuple  # dicts of shape symbols; the first is timed, all are checked
    doc: str = ""


@dataclasses.dataclass(frozen=True)
class Measurement:
    """The verdict on one kernel (passed, or the failure's kind and message), its timing and the machine."""

    passed: bool
    failure_kind: str  # a runtime.failures kind; "" when passed
    message: str
    check: typing.Optional[dict]  # runtime.check's CheckResult, when the check ran to the end
    timing: typing.Optional[dict]  # runtime.timing's TimingResult (median_ms, p10_ms, ...), when timed
    environment: dict  # the machine record (GPU, clocks, driver, versions); empty when the worker died
    elapsed_s: float  # the job's time in its worker
    worker_replaced: bool


class UnknownTask(ValueError):
    """The request names a task the measurer does not have."""


def run(payload):
    """The worker task: load the artifact, check it on every shape, time it at the first. JSON-able."""
    from cake.compiler.v1 import artifact_pb2

    from runtime.check import check_kernel
    from runtime.compiled import CompiledKernelRunner
    from runtime.environment import collect
    from runtime.timing import TimingConfig, time_kernel

    runner = CompiledKernelRunner(artifact_pb2.CompiledKernel.FromString(payload["compiled"]))
    launch = names.resolve(payload["binding"])(runner, payload.get("options", {}))
    contract = names.resolve(payload["contract"])([dict(s) for s in payload["shapes"]])
    check = check_kernel(contract, launch)
    out = {"passed": check.passed, "kind": check.kind or "", "message": check.message, "check": check.to_dict(),
           "timing": None, "environment": collect()}
    if check.passed:
        timing = time_kernel(contract, launch, TimingConfig(**payload["timing"]))
        out["timing"] = timing.to_dict()
        out["environment"] = timing.environment
        if not timing.verified:
            out.update(passed=False, kind=failures.WRONG_RESULT, message=timing.verification)
    return out


class Measurer:
    """Measures compiled kernels for registered tasks in one isolated worker pool (one job at a time)."""

    def __init__(self, tasks, results_path=None, worker_task=WORKER_TASK, initializer=INITIALIZER,
                 time_limit_s=300.0, start_timeout_s=300.0):
        self.tasks = dict(tasks)
        self.worker_task = worker_task
        self.time_limit_s = time_limit_s
        self.pool = pool_.WorkerPool(results_path=results_path, initializer=initializer,
                                     start_timeout_s=start_timeout_s)
        self._lock = threading.Lock()

    def start(self):
        """Start the first worker now (so a host without a GPU fails here, not on the first call)."""
        with self._lock:
            self.pool._ready_worker()

    def task(self, name):
        try:
            return self.tasks[name]
        except KeyError:
            raise UnknownTask("unknown task %r; this server measures: %s" % (name, ", ".join(sorted(self.tasks)) or "none")) \
                from None

    def measure(self, compiled, task, shapes=None, timing=None, time_limit_s=None, label=""):
        """The Measurement of `compiled` (a CompiledKernel) for `task`; shapes/timing default to the task's."""
        t = self.task(task)
        payload = {
            "compiled": compiled.SerializeToString(),
            "contract": t.contract,
            "binding": t.binding,
            "shapes": [dict(s) for s in (shapes or t.shapes)],
            "timing": dict(DEFAULT_TIMING, **(timing or {})),
            "options": {},
        }
        job = pool_.Job(task=self.worker_task, payload=payload, ir_hash=compiled.ir_hash,
                        time_limit_s=time_limit_s or self.time_limit_s, label=label or task)
        with self._lock:
            record = self.pool.run(job)
        return measurement(record)

    def close(self):
        with self._lock:
            self.pool.close()


def measurement(record):
    """The Measurement a pool record describes (a worker failure is a verdict, not an error)."""
    common = dict(elapsed_s=record["elapsed_s"], worker_replaced=record["worker_replaced"])
    if not record["ok"]:
        f = record["failure"]
        return Measurement(False, f["kind"], f["message"], None, None, {}, **common)
    r = record["result"]
    return Measurement(bool(r["passed"]), "" if r["passed"] else r["kind"], r["message"], r.get("check"),
                       r.get("timing"), r.get("environment") or {}, **common)

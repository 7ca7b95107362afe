"""One candidate's evaluation: load its cubin, check it against its contract, then time it.

Parent side (never touches the GPU): `pool()` starts an evaluation WorkerPool,
`job(request)` wraps an EvalRequest for it, `outcome(record)` reads the pool's
record as an Evaluation. Worker side: `init_worker` prepares CUDA once per worker
(outside any time limit) and `run(request)` is the task. The check and the timing
use separate calls; timing runs only for kernels the check admits.
"""

import dataclasses
import typing

from runtime import failures, names, pool as pool_
from runtime.timing import TimingConfig

TASK = "runtime.evaluate:run"
INITIALIZER = "runtime.evaluate:init_worker"


@dataclasses.dataclass(frozen=True)
class EvalRequest:
    """Everything a worker needs to evaluate one candidate (picklable)."""

    ir_hash: str
    cubin: bytes
    binding: str  # "package.module:function": function(loader.Module) -> launch(outputs, inputs)
    contract: str  # "package.module:function": function() -> contract.Contract
    timing: typing.Optional[TimingConfig] = TimingConfig()  # None: check only
    seed: typing.Optional[int] = None  # None: fresh inputs
    label: str = ""


@dataclasses.dataclass(frozen=True)
class Evaluation:
    """The verdict on one candidate, whichever way it ended."""

    passed: bool
    failure: typing.Optional[failures.FailureSignature]
    check: typing.Optional[dict]  # check.CheckResult as a dict, when the check ran to the end
    timing: typing.Optional[dict]  # timing.TimingResult as a dict, when the kernel was timed
    record: dict  # the pool's full record, as logged


def init_worker():
    """Worker initializer: make torch's CUDA context current and load torch's own kernels."""
    import torch

    from runtime.loader import ensure_context

    ensure_context()
    torch.zeros(1, device="cuda").add_(1)
    torch.cuda.synchronize()


def run(request):
    """The worker task: check, then time; returns a JSON-able dict."""
    from runtime.check import check_kernel
    from runtime.loader import Module
    from runtime.timing import time_kernel

    contract = names.resolve(request.contract)()
    launch = names.resolve(request.binding)(Module(request.cubin))
    check = check_kernel(contract, launch, device="cuda", seed=request.seed)
    result = {
        "contract": request.contract,
        "binding": request.binding,
        "passed": check.passed,
        "failure": None,
        "check": check.to_dict(),
        "timing": None,
    }
    if not check.passed:
        result["failure"] = failures.FailureSignature(check.kind, failures.truncate(check.message), request.ir_hash).to_dict()
    elif request.timing is not None:
        timing = time_kernel(contract, launch, request.timing)
        result["timing"] = timing.to_dict()
        if not timing.verified:
            result["passed"] = False
            result["failure"] = failures.FailureSignature(
                failures.WRONG_RESULT, failures.truncate(timing.verification), request.ir_hash
            ).to_dict()
    return result


def pool(results_path=None, **options):
    """A WorkerPool whose workers are ready for CUDA evaluations."""
    return pool_.WorkerPool(results_path=results_path, initializer=INITIALIZER, **options)


def job(request, time_limit_s=120.0):
    """The pool Job evaluating `request` within `time_limit_s` seconds."""
    return pool_.Job(task=TASK, payload=request, ir_hash=request.ir_hash, time_limit_s=time_limit_s, label=request.label)


def outcome(record):
    """The Evaluation a pool record describes."""
    if not record["ok"]:
        return Evaluation(False, failures.FailureSignature.from_dict(record["failure"]), None, None, record)
    r = record["result"]
    failure = failures.FailureSignature.from_dict(r["failure"]) if r["failure"] else None
    return Evaluation(r["passed"], failure, r["check"], r["timing"], record)

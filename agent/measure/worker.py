"""Worker-side tasks (runtime/pool.py runs them in spawned processes that own the GPU).

`evaluate` loads a compiled candidate, checks it with the runtime's oracle on every
shape of its contract (fresh inputs, poisoned outputs) and times it with the
runtime's protocol (cold L2, CUDA events, verified timed outputs); `time_peer` times
a peer implementation of the task's contract (flashlib, flash-kmeans, cuBLAS: its
contract file names where each comes from) the same way. Both return JSON-able dicts.
"""

from runtime import names


def _contract(payload):
    return names.resolve(payload["contract"])([dict(s) for s in payload["shapes"]])


def evaluate(payload):
    from cake.compiler.v1 import artifact_pb2

    from runtime.check import check_kernel
    from runtime.compiled import CompiledKernelRunner
    from runtime.timing import TimingConfig, time_kernel

    runner = CompiledKernelRunner(artifact_pb2.CompiledKernel.FromString(payload["compiled"]))
    launch = names.resolve(payload["binding"])(runner, payload)
    contract = _contract(payload)
    check = check_kernel(contract, launch)
    if not check.passed:
        return {"passed": False, "kind": check.kind, "message": check.message}
    t = time_kernel(contract, launch, TimingConfig(**payload["timing"]))
    if not t.verified:
        return {"passed": False, "kind": "wrong_result", "message": t.verification}
    return {"passed": True, "median_ms": t.median_ms, "p10_ms": t.p10_ms, "p90_ms": t.p90_ms,
            "check": check.message, "environment": t.environment}


def time_peer(payload):
    from runtime.check import check_kernel
    from runtime.timing import TimingConfig, time_kernel

    launch = names.resolve(payload["from"])().get(payload["name"])
    if launch is None:
        return {"available": False}
    contract = _contract(payload)
    check = check_kernel(contract, launch)
    if not check.passed:
        return {"available": True, "passed": False, "message": check.message}
    t = time_kernel(contract, launch, TimingConfig(**payload["timing"]))
    return {"available": True, "passed": t.verified, "median_ms": t.median_ms, "message": t.verification}

"""A measurer whose workers measure nothing (no GPU): for the Measure RPC's and the MCP server's CPU tests.

`measurer()` registers two tasks over runtime/measure.py's Measurer without a CUDA
initializer: "gemm_bf16" runs `passed` (a result shaped as runtime.measure.run's, after
checking the payload it got) and "hang" runs runtime/testing/fake_tasks.sleep_forever,
so the pool's time limit, not the test, ends it.
"""

from runtime.measure import Measurer, Task

ENVIRONMENT = {"gpu": "fake", "torch": "none"}


def passed(payload):
    from cake.compiler.v1 import artifact_pb2

    compiled = artifact_pb2.CompiledKernel.FromString(payload["compiled"])
    assert compiled.cubin and payload["contract"] and payload["binding"] and payload["shapes"]
    shape = payload["shapes"][0]
    return {"passed": True, "kind": "", "message": "fake: %d shapes checked" % len(payload["shapes"]),
            "check": {"passed": True, "cases": len(payload["shapes"])},
            "timing": {"median_ms": 1.5, "p10_ms": 1.4, "p90_ms": 1.6, "reps": payload["timing"]["reps"],
                       "verified": True, "shape": shape, "times_ms": [1.5]},
            "environment": ENVIRONMENT}


class _Routed(Measurer):
    """Runs each task's worker function by the task's binding name (fake tasks only)."""

    def measure(self, compiled, task, shapes=None, timing=None, time_limit_s=None, label=""):
        self.worker_task = self.task(task).binding
        return super().measure(compiled, task, shapes, timing, time_limit_s, label)


def measurer(time_limit_s=3.0):
    tasks = {
        "gemm_bf16": Task("kernels.gemm.contract:gemm_contract", "runtime.testing.fake_measure:passed",
                          ({"M": 256, "N": 256, "K": 64},), "fake: checks nothing, times nothing"),
        "hang": Task("kernels.gemm.contract:gemm_contract", "runtime.testing.fake_tasks:sleep_forever",
                     ({"M": 256, "N": 256, "K": 64},), "fake: never returns"),
    }
    return _Routed(tasks, initializer=None, time_limit_s=time_limit_s, start_timeout_s=60.0)

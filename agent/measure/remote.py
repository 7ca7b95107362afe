"""Measured fitness from a remote GPU: the compiler service's Measure RPC (a server started with --measure).

    ev = RemoteEvaluator(CompilerClient("gpu-host:50051", token=...), "kmeans_assign", shapes)

An agent on a machine without a GPU closes its loop through a measuring service: the
server compiles the candidate, checks it with the runtime's oracle and times it in an
isolated worker, and answers with the verdict, the timing and the machine record. The
task is one the server lists (ListTasks); a candidate's own binding is the server's
concern, so `binding` is unused here. `bazel run //agent:evolve -- --measure-address
HOST:PORT` uses it; closing the evaluator closes its client.
"""

from google.protobuf import json_format

from agent.measure.result import Measured


class RemoteEvaluator:
    def __init__(self, client, task, shapes, check_shapes=(), reps=30, timeout_s=900.0):
        self.client = client
        self.task = task
        self.shapes = [dict(shapes)] + [dict(s) for s in check_shapes]
        self.reps = reps
        self.timeout_s = timeout_s
        listed = client.list_tasks()
        if not listed.enabled:
            raise ValueError("the compiler service does not measure (start it with --measure on a GPU host)")
        if task not in {t.name for t in listed.tasks}:
            raise ValueError("the compiler service does not measure task %r; it has: %s"
                             % (task, ", ".join(t.name for t in listed.tasks)))

    def measure(self, compiled, kernel, binding, label):
        r = self.client.measure(kernel, self.task, shapes=self.shapes, target=compiled.target, reps=self.reps,
                                timeout=self.timeout_s)
        if not r.measured:
            message = "; ".join(d.message for d in r.diagnostics) or "not measured"
            return Measured(False, kind="exception", message="the server did not measure it: " + message)
        v = r.verdict
        if not v.passed:
            return Measured(False, device_s=v.elapsed_seconds, kind=v.failure_kind, message=v.message)
        t = r.timing
        return Measured(True, t.median_ms * 1e-3, t.p10_ms * 1e-3, t.p90_ms * 1e-3, v.elapsed_seconds,
                        detail={"check": v.message, "environment": json_format.MessageToDict(r.machine),
                                "remote": True})

    def peers(self):
        return {}

    def close(self):
        self.client.close()

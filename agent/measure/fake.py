"""A fake evaluator for tests: measured time is a function of the kernel, with scripted failures.

A candidate's "measured" time is its cost-model prediction (asked of the compiler
service, in this process: agent/compiler_port.py) times `scale`, and kernels matching
`fail_when` (a predicate on the kernel) fail with `fail_kind`, each costing `device_s`
seconds of pretend device time (and `delay_s` real seconds).
"""

import os
import time

from agent.compiler_port import process_port
from agent.measure.result import Measured


class FakeEvaluator:
    def __init__(self, shapes, device, scale=1.3, fail_when=None, fail_kind="wrong_result", device_s=0.5, delay_s=0.0):
        self.shapes, self.device = shapes, device
        self.scale = scale
        self.fail_when = fail_when
        self.fail_kind = fail_kind
        self.device_s = device_s
        self.delay_s = delay_s  # real seconds each measurement takes (tests that act while one is in flight)
        self.calls = 0

    def warm(self):
        """Nothing to start."""

    def measure(self, compiled, kernel, binding, label):
        self.calls += 1
        if self.delay_s:
            time.sleep(self.delay_s)
        if self.fail_when is not None and self.fail_when(kernel):
            return Measured(False, device_s=self.device_s, kind=self.fail_kind,
                            message="case 0 (fake): labels disagree on 12.5% of points")
        analysis = process_port().analyze(kernel, self.shapes, self.device)
        if analysis.report is None:
            raise ValueError("the fake evaluator predicts from the cost model, which refuses this kernel: %s"
                             % "; ".join(d.message for d in analysis.diagnostics))
        t = analysis.report.predicted_seconds * self.scale
        # The device it "ran" on: executors pin each measurement worker with CUDA_VISIBLE_DEVICES.
        return Measured(True, t, t * 0.98, t * 1.02, self.device_s,
                        detail={"fake": True, "device": os.environ.get("CUDA_VISIBLE_DEVICES", "")})

    def peers(self):
        return {}

    def close(self):
        pass

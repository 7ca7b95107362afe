"""A process of ours that holds a gRPC channel can still start subprocesses (gRPC's fork support stays off)."""

import os
import subprocess
import sys

# A fresh interpreter, with no GRPC_ENABLE_FORK_SUPPORT of its own: imports the service package, opens a
# channel (which starts gRPC's poller), then starts children the way the test suite and nvcc runs do (close_fds,
# a preexec_fn). With fork support on, about 4% of such children die of SIGABRT before exec (grpc/grpc#43055).
CHILD = r"""
import signal, subprocess, sys
import compiler.service
import grpc
channel = grpc.insecure_channel("127.0.0.1:1")
try:
    grpc.channel_ready_future(channel).result(timeout=0.2)
except grpc.FutureTimeoutError:
    pass
codes = [subprocess.Popen(["true"], stderr=subprocess.DEVNULL,
                          preexec_fn=lambda: signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})).wait()
         for _ in range(200)]
print(sum(c != 0 for c in codes))
"""


def test_children_of_a_process_with_a_channel_start():
    env = {k: v for k, v in os.environ.items() if k != "GRPC_ENABLE_FORK_SUPPORT"}
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    out = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "0", "children lost to SIGABRT: %s\n%s" % (out.stdout, out.stderr[-2000:])

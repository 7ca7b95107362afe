"""Pool tasks that misbehave the way candidate kernels do, without a GPU (for runtime/pool_test.py)."""

import os
import time


def echo(payload):
    return {"payload": payload, "pid": os.getpid()}


def sleep_forever(payload):
    while True:  # a hang: only the time limit ends it
        time.sleep(1)


def abort(payload):
    os.abort()


def exit_silently(payload):
    os._exit(0)


def raise_value_error(payload):
    raise ValueError("bad launch configuration: %s" % payload)


def raise_illegal_address(payload):
    raise RuntimeError("CUDA error: an illegal memory access was encountered")


def unpicklable(payload):
    return lambda: None


def fail_to_start():
    raise RuntimeError("no GPU in this worker")

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


def check_gemv_on_cpu(seed):
    """A real oracle run on CPU (torch's mv as the kernel): proves check results cross the pipe."""
    import torch

    from runtime.check import check_kernel
    from runtime.testing import gemv_contract

    def mv(outputs, inputs):
        torch.mv(*inputs, out=outputs[0])

    return check_kernel(gemv_contract.contract(), mv, device="cpu", seed=seed).to_dict()

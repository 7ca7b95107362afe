"""Kernels as PyTorch custom ops: cake::<name>, with a fake (meta) implementation.

A registered op allocates its outputs from the contract's output specs, poisons them
(so anything the kernel leaves unwritten reads as NaN, not as stale memory), launches
`launch(outputs, inputs)` on torch's current stream and returns them. The same
output specs drive register_fake, so torch.compile and torch.library.opcheck see
shapes and dtypes without running the kernel.
"""

import torch

from runtime import poison

NAMESPACE = "cake"
_registered = {}  # op name -> CustomOpDef


def schema(contract):
    """The op schema for `contract`: its inputs by name, one Tensor per output."""
    params = ", ".join("Tensor %s" % name for name in contract.input_names)
    n_out = len(contract.output_names)
    returns = "Tensor" if n_out == 1 else "(%s)" % ", ".join(["Tensor"] * n_out)
    return "(%s) -> %s" % (params, returns)


def register(name, contract, launch, device_types="cuda"):
    """Register `launch` as torch.ops.cake.<name>; returns the op (callable with the inputs)."""
    if name in _registered:
        raise ValueError("%s::%s is already registered" % (NAMESPACE, name))

    def allocate(inputs):
        device = inputs[0].device
        return [torch.empty(tuple(s.shape), dtype=s.dtype, device=device) for s in contract.outputs(list(inputs))]

    def impl(*inputs):
        outputs = [poison.fill(out) for out in allocate(inputs)]
        launch(outputs, list(inputs))
        return outputs[0] if len(outputs) == 1 else tuple(outputs)

    def fake(*inputs):
        outputs = allocate(inputs)
        return outputs[0] if len(outputs) == 1 else tuple(outputs)

    op = torch.library.custom_op(
        "%s::%s" % (NAMESPACE, name), impl, mutates_args=(), device_types=device_types, schema=schema(contract)
    )
    op.register_fake(fake)
    _registered[name] = op
    return op


def get(name):
    """The op registered as cake::<name>."""
    try:
        return _registered[name]
    except KeyError:
        raise KeyError("no op %s::%s registered (known: %s)" % (NAMESPACE, name, ", ".join(sorted(_registered)))) from None

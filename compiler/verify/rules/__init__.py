"""The verifier's rule families, one file each; importing this package registers them.

They run in this order (static rules of all families, then the protocol model's rules):
structure, operands, shapes, contract, outputs, resources, registers, target_caps, tma,
sync_protocol, pipelines, dataflow, proxy_fence, topk, topk_collect.
"""

from compiler.verify.rules import (  # noqa: F401  (importing registers the rules)
    structure,
    operands,
    shapes,
    contract,
    outputs,
    resources,
    registers,
    target_caps,
    tma,
    sync_protocol,
    pipelines,
    dataflow,
    proxy_fence,
    topk,
    topk_collect,
)

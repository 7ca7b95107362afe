"""The kernel ABI: THE list of a kernel's arguments, in launch order.

Lowering prints the signature from it (emit.py) and the launch metadata the runtime
binds arguments by (metadata.py); the two cannot drift apart. In order:
- each param, in declaration order: a tensor as a pointer (read-only when its access
  is read), a scalar by value;
- each contract symbol without a fixed value, as an int64 (`<name>_arg`);
- each CUtensorMap lowering builds (found while emitting the body), by value.
"""

import collections

from cake.ir.v1 import ir_pb2

POINTER, SCALAR, SYMBOL, TENSOR_MAP = "pointer", "scalar", "symbol", "tensor_map"

# name: the argument's name; kind: one of the above; source: the param or symbol it carries;
# dtype: its element or value type; read_only: a pointer the kernel does not write through;
# tensor_map: the lowering's tensor map (TENSOR_MAP arguments only).
Argument = collections.namedtuple("Argument", "name kind source dtype read_only tensor_map")


def arguments(kernel, tensor_maps=()):
    """The Arguments of `kernel`, with `tensor_maps` (objects with .arg and .param) last."""
    out = []
    for p in kernel.params:
        if p.kind == ir_pb2.PARAM_KIND_TENSOR:
            out.append(Argument(p.name, POINTER, p.name, p.dtype, p.access == ir_pb2.ACCESS_READ, None))
        else:
            out.append(Argument(p.name, SCALAR, p.name, p.dtype, False, None))
    for s in kernel.contract.symbols:
        if not s.HasField("value"):
            out.append(Argument(s.name + "_arg", SYMBOL, s.name, ir_pb2.DTYPE_I64, False, None))
    params = {p.name: p for p in kernel.params}
    for t in tensor_maps:
        param = params.get(t.param)
        out.append(Argument(t.arg, TENSOR_MAP, t.param, param.dtype if param else ir_pb2.DTYPE_UNSPECIFIED, True, t))
    return out

"""The state lowering passes share: the kernel, its target, and every derived fact."""

import dataclasses

from cake.ir.v1 import ir_pb2

from compiler.ir.enums import short_name

# The C++ type generated code uses for each dtype.
DTYPE_CTYPE = {
    ir_pb2.DTYPE_BF16: "cake::bf16",
    ir_pb2.DTYPE_F16: "cake::f16",
    ir_pb2.DTYPE_F32: "float",
    ir_pb2.DTYPE_F64: "double",
    ir_pb2.DTYPE_FP8_E4M3: "uint8_t",
    ir_pb2.DTYPE_I8: "int8_t",
    ir_pb2.DTYPE_I32: "int32_t",
    ir_pb2.DTYPE_I64: "int64_t",
    ir_pb2.DTYPE_U32: "uint32_t",
}


class LoweringError(ValueError):
    """The kernel cannot be lowered as written; `path` locates the IR node."""

    def __init__(self, path, message, fix_hint=""):
        super().__init__("%s: %s" % (path, message))
        self.path = path
        self.message = message
        self.fix_hint = fix_hint


@dataclasses.dataclass
class SharedRegion:
    """Where a shared region lives: byte offset of stage 0, bytes per stage, geometry."""

    region: ir_pb2.Region
    offset: int
    stage_bytes: int
    esize: int
    span: int  # swizzle span in bytes, 0 for none

    @property
    def rows(self):
        return self.region.shape[0] if len(self.region.shape) > 1 else 1

    @property
    def cols(self):
        return self.region.shape[-1]

    def address(self, stage="0", extra=0):
        """C++ address of byte `extra` of stage `stage` (C++ text): constant parts folded, zero terms left out."""
        offset, terms = self.offset + extra, []
        if stage.isdigit():
            offset += int(stage) * self.stage_bytes
        else:
            terms.append("(%s) * %d" % (stage, self.stage_bytes))
        return " + ".join(["cake_smem"] + ([str(offset)] if offset else []) + terms)


@dataclasses.dataclass
class TensorMap:
    """One CUtensorMap the host builds: a tensor param viewed in boxes of `box` elements."""

    param: str
    box: list  # outermost first, one per tensor dim
    swizzle: int  # ir_pb2.Swizzle
    arg: str  # kernel argument name

    @property
    def key(self):
        return (self.param, tuple(self.box), self.swizzle)


@dataclasses.dataclass
class RoleInfo:
    role: ir_pb2.Role
    index: int
    first_warp: int
    warps: int

    @property
    def threads(self):
        return 32 * self.warps


@dataclasses.dataclass
class Context:
    """Everything derived about one kernel while lowering it."""

    kernel: ir_pb2.Kernel
    target: object  # compiler.targets.Target
    limits: object  # compiler.targets.database.Limits of the target's default device
    shared: dict = dataclasses.field(default_factory=dict)  # region name -> SharedRegion
    registers: dict = dataclasses.field(default_factory=dict)  # region name -> ir_pb2.Region
    mbarriers: dict = dataclasses.field(default_factory=dict)  # name -> (offset, Barrier)
    named_barriers: dict = dataclasses.field(default_factory=dict)  # name -> (hw id, Barrier)
    shared_bytes: int = 0
    tensor_maps: list = dataclasses.field(default_factory=list)
    roles: list = dataclasses.field(default_factory=list)  # RoleInfo
    spans: list = dataclasses.field(default_factory=list)  # compiler.ir.roles.RoleSpan per role
    threads: int = 0
    entry_registers: int = 0  # registers per thread at launch (compiler/targets/registers.py)
    params: dict = dataclasses.field(default_factory=dict)  # name -> ir_pb2.Param
    symbols: dict = dataclasses.field(default_factory=dict)  # name -> ir_pb2.Symbol
    pointer_params: set = dataclasses.field(default_factory=set)  # tensor params used through pointers
    scratch: dict = dataclasses.field(default_factory=dict)  # role name -> (offset, cols) of its f32 scratch tile
    role_barriers: dict = dataclasses.field(default_factory=dict)  # role name -> hidden named barrier id
    source: str = ""
    launch: object = None  # artifact_pb2.LaunchMetadata

    def tensor_map_for(self, param, box, swizzle):
        """The tensor map for (param, box, swizzle), created on first use."""
        key = (param, tuple(box), swizzle)
        for t in self.tensor_maps:
            if t.key == key:
                return t
        t = TensorMap(param, list(box), swizzle, "tmap_%s_%d" % (param, len(self.tensor_maps)))
        self.tensor_maps.append(t)
        return t

    def role_of_register(self, name):
        return self.registers[name].owner


def dtype_name(dtype):
    return short_name(ir_pb2.Dtype.DESCRIPTOR, dtype)

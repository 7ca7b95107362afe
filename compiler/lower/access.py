"""C++ access to one element of a shared tile or a global tensor, by tile coordinates.

Shared tiles are addressed through cake::smem::at (the swizzled panel layout), adjacent
column pairs through cake::smem::load_pair / store_pair; a tile's window shifts its coordinates. Global tiles address the trailing dims of the tensor at
the GlobalRef's origin, with a bounds predicate against the tensor's shape.
"""

import math

from compiler.ir import shapes
from compiler.lower.cexpr import ident
from compiler.lower.context import DTYPE_CTYPE, LoweringError

# Element types with a 2-element shared access (cake::smem::Pair).
PAIR_CTYPES = ("cake::bf16", "cake::f16", "float")


class SharedAccess:
    def __init__(self, em, ref, path):
        ctx = em.ctx
        if ref.region not in ctx.shared:
            raise LoweringError(path, "%r is not a shared region" % ref.region)
        sr = ctx.shared[ref.region]
        self.sr = sr
        self.ctype = DTYPE_CTYPE[sr.region.dtype]
        shape = list(sr.region.shape)
        self.rows, self.cols = (shape[-2] if len(shape) > 1 else 1), shape[-1]
        self.rank = len(shape)
        stage = em.expr(ref.stage) if ref.HasField("stage") else "0"
        self.base = "(%s)" % sr.address(stage)
        self.offsets = [em.expr(w.start) for w in ref.window]
        self.shape = shapes.tile_shape(ref, sr.region)
        if len(self.offsets) not in (0, self.rank):
            raise LoweringError(path, "window of %r has %d dims, the tile %d" % (ref.region, len(self.offsets), self.rank))
        # Column pairs (c, c + 1), c even, are one aligned word (cake::smem::pair_at) when the row
        # length and the window's column offset are even, the latter known here.
        col_start = ref.window[-1].start if ref.window else None
        even_start = col_start is None or (col_start.WhichOneof("kind") == "int" and col_start.int % 2 == 0)
        self.pairs = self.ctype in PAIR_CTYPES and self.cols % 2 == 0 and even_start

    def _at(self, coords):
        coords = list(coords)
        if self.offsets:
            coords = ["(%s) + (%s)" % (c, o) for c, o in zip(coords, self.offsets)]
        if len(coords) == 1:
            coords = ["0"] + coords
        return "<%s, %d, %d, %d>(%s, %s, %s" % (self.ctype, self.rows, self.cols, self.sr.span, self.base, coords[-2], coords[-1])

    def lvalue(self, coords):
        return "cake::smem::at%s)" % self._at(coords)

    def load_pair(self, coords):
        """float2 of elements coords and coords + (0, 1) (the column even; only when self.pairs)."""
        return "cake::smem::load_pair%s)" % self._at(coords)

    def store_pair(self, coords, a, b):
        """Statement storing floats a, b at coords and coords + (0, 1) (only when self.pairs)."""
        return "cake::smem::store_pair%s, %s, %s);" % (self._at(coords), a, b)

    @property
    def elements(self):
        return math.prod(self.shape)


class GlobalAccess:
    def __init__(self, em, ref, path):
        if ref.param not in em.ctx.params:
            raise LoweringError(path, "unknown tensor %r" % ref.param)
        self.param = em.ctx.params[ref.param]
        self.ctype = DTYPE_CTYPE[self.param.dtype]
        self.dims = [em.expr(d) for d in self.param.shape]
        self.origin = [em.expr(c) for c in ref.coords]
        if len(self.origin) != len(self.dims):
            raise LoweringError(path, "%r has %d dims but %d coordinates" % (ref.param, len(self.dims), len(self.origin)))
        self.ptr = ident(ref.param)

    def _full(self, coords):
        coords = list(coords)
        lead = len(self.origin) - len(coords)
        if lead < 0:
            raise ValueError("tile of rank %d addresses a tensor of rank %d" % (len(coords), len(self.origin)))
        return self.origin[:lead] + ["(%s) + (%s)" % (o, c) for o, c in zip(self.origin[lead:], coords)]

    def index(self, coords):
        full = self._full(coords)
        idx = "(long long)(%s)" % full[0]
        for d, c in zip(self.dims[1:], full[1:]):
            idx = "(%s * (%s) + (%s))" % (idx, d, c)
        return idx

    def lvalue(self, coords):
        return "%s[%s]" % (self.ptr, self.index(coords))

    def in_bounds(self, coords):
        full = self._full(coords)
        lead = len(self.origin) - len(list(coords))
        return " && ".join("(%s) < (%s)" % (c, d) for c, d in zip(full[lead:], self.dims[lead:])) or "true"

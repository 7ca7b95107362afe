"""Register fragments: their C++ declarations and which element each thread holds.

A Fragment answers, for the calling thread: how many elements it holds (`count`, compiler/ir/
fragments.py's values_per_thread, which the verifier and the cost model count too), the
C++ lvalue of element i, and element i's coordinates in the region's shape. Math ops
iterate `for i in [0, count)` over a destination fragment and read operands at the
same coordinates, so any op works on any layout without per-layout code in the op.
"""

from cake.ir.v1 import ir_pb2

from compiler.ir import fragments
from compiler.lower.context import DTYPE_CTYPE, LoweringError

L = ir_pb2.FragmentLayout


class Fragment:
    """One register region as the owning threads see it."""

    def __init__(self, region):
        self.region = region
        self.name = "r_" + region.name
        self.ctype = DTYPE_CTYPE.get(region.dtype, "float")
        shape = list(region.shape)
        self.shape = shape
        layout = region.layout
        self.layout = layout
        if layout == L.FRAGMENT_LAYOUT_WGMMA_ACC:
            self._need(len(shape) == 2 and shape[0] == 64 and shape[1] % 8 == 0, "[64, N] with N % 8 == 0")
            self.cls = "cake::WgmmaAcc<%d>" % shape[1]
            self.decl = "%s %s;" % (self.cls, self.name)
            self.count = fragments.values_per_thread(region)
        elif layout in (L.FRAGMENT_LAYOUT_WGMMA_ROWS, L.FRAGMENT_LAYOUT_MMA_ROWS):
            # One value (or a list of per_row values, e.g. top-k) per accumulator row.
            if layout == L.FRAGMENT_LAYOUT_WGMMA_ROWS:
                self._need(len(shape) in (1, 2) and shape[0] == 64, "[64] or [64, k]")
                self.cls = "cake::WgmmaRows<%s>" % self.ctype
            else:
                self._need(len(shape) in (1, 2) and shape[0] % 16 == 0, "[16 i] or [16 i, k]")
                self.cls = "cake::MmaRows<%s, %d>" % (self.ctype, shape[0] // 16)
            self.per_row = shape[1] if len(shape) == 2 else 1
            self.count = fragments.values_per_thread(region)
            self.decl = "%s %s[%d];" % (self.ctype, self.name, self.count)
        elif layout == L.FRAGMENT_LAYOUT_WGMMA_COLS:
            # One value (or a list of per_row values) per column of a [64, N] accumulator.
            self._need(len(shape) in (1, 2) and shape[0] % 16 == 0 and 16 <= shape[0] <= 256, "[N] or [N, k], N in 16..256 step 16")
            self.cls = "cake::WgmmaCols<%s, %d>" % (self.ctype, shape[0])
            self.per_row = shape[1] if len(shape) == 2 else 1
            self.count = fragments.values_per_thread(region)
            self.decl = "%s %s[%d];" % (self.ctype, self.name, self.count)
        elif layout == L.FRAGMENT_LAYOUT_MMA_ACC:
            self._need(len(shape) == 2 and shape[0] % 16 == 0 and shape[1] % 8 == 0, "[16 i, 8 j]")
            self.cls = "cake::MmaAcc<%d, %d>" % (shape[0] // 16, shape[1] // 8)
            self.decl = "%s %s;" % (self.cls, self.name)
            self.count = fragments.values_per_thread(region)
        elif layout == L.FRAGMENT_LAYOUT_MMA_A:
            self._need(len(shape) == 2 and shape[0] % 16 == 0 and shape[1] % 16 == 0, "[16 i, 16 k]")
            self.cls = "cake::MmaA<%d, %d>" % (shape[0] // 16, shape[1] // 16)
            self.decl = "%s %s;" % (self.cls, self.name)
            self.count = None  # packed operand registers, not elementwise data
        elif layout == L.FRAGMENT_LAYOUT_MMA_B:
            self._need(len(shape) == 2 and shape[0] % 8 == 0 and shape[1] % 16 == 0, "[8 j, 16 k]")
            self.cls = "cake::MmaB<%d, %d>" % (shape[0] // 8, shape[1] // 16)
            self.decl = "%s %s;" % (self.cls, self.name)
            self.count = None
        elif layout == L.FRAGMENT_LAYOUT_ROW_PER_THREAD:
            self._need(len(shape) in (1, 2), "[threads] or [threads, N]")
            self.cls = None
            self.count = fragments.values_per_thread(region)
            self.decl = "%s %s[%d];" % (self.ctype, self.name, self.count)
        elif layout == L.FRAGMENT_LAYOUT_PER_THREAD:
            self._need(shape and all(d > 0 for d in shape), "with positive dimensions")
            self.cls = None
            self.count = fragments.values_per_thread(region)
            self.decl = "%s %s[%d];" % (self.ctype, self.name, self.count)
        else:
            raise LoweringError("region %s" % region.name, "register region %r has no fragment layout" % region.name)

    def _need(self, ok, what):
        if not ok:
            raise LoweringError(
                "region %s" % self.region.name,
                "register region %r with this layout must have shape %s, not %s" % (self.region.name, what, self.shape),
            )

    def elem(self, i):
        """C++ lvalue of the thread's element i."""
        if self.cls and not (self.is_rows or self.is_cols):
            return "%s.d[%s]" % (self.name, i)
        return "%s[%s]" % (self.name, i)

    def coords(self, i):
        """C++ coordinates of element i within the region's shape (outermost first)."""
        if self.layout in (L.FRAGMENT_LAYOUT_WGMMA_ACC, L.FRAGMENT_LAYOUT_MMA_ACC):
            return ["%s::row(%s)" % (self.cls, i), "%s::col(%s)" % (self.cls, i)]
        if self.is_rows or self.is_cols:
            at = "row" if self.is_rows else "col"
            if len(self.shape) == 1:
                return ["%s::%s(%s)" % (self.cls, at, i)]
            return ["%s::%s((%s) / %d)" % (self.cls, at, i, self.per_row), "(%s) %% %d" % (i, self.per_row)]
        if self.layout == L.FRAGMENT_LAYOUT_ROW_PER_THREAD:
            return ["cake_thread"] + ([str(i)] if len(self.shape) == 2 else [])
        # PER_THREAD: row-major decomposition of the flat index.
        coords, stride = [], 1
        for d in reversed(self.shape):
            coords.append("((%s) / %d) %% %d" % (i, stride, d) if stride > 1 else "(%s) %% %d" % (i, d))
            stride *= d
        return list(reversed(coords)) or ["0"]

    @property
    def column_pairs(self):
        """Whether values i, i + 1 (i even) are one row's columns c, c + 1 with c even (accumulators)."""
        acc = self.layout in (L.FRAGMENT_LAYOUT_WGMMA_ACC, L.FRAGMENT_LAYOUT_MMA_ACC)
        return acc and self.ctype == "float" and self.count is not None and self.count % 2 == 0

    @property
    def is_rows(self):
        return self.layout in (L.FRAGMENT_LAYOUT_WGMMA_ROWS, L.FRAGMENT_LAYOUT_MMA_ROWS)

    @property
    def is_cols(self):
        return self.layout == L.FRAGMENT_LAYOUT_WGMMA_COLS

    @property
    def one_per_row(self):
        """A fragment holding one value per row of the rows it covers (broadcast along columns)."""
        if self.is_rows or self.is_cols:
            return self.per_row == 1
        return self.layout == L.FRAGMENT_LAYOUT_ROW_PER_THREAD and self.count == 1

    def row_value_index(self, dst, i):
        """Element of this one-per-row fragment that holds the row of `dst`'s element i."""
        if self.layout == L.FRAGMENT_LAYOUT_ROW_PER_THREAD and dst.layout == L.FRAGMENT_LAYOUT_ROW_PER_THREAD:
            return "0"
        if self.is_rows and dst.layout in (L.FRAGMENT_LAYOUT_WGMMA_ACC, L.FRAGMENT_LAYOUT_MMA_ACC):
            return "%s::row_slot(%s)" % (dst.cls, i)
        if (self.is_rows and dst.is_rows) or (self.is_cols and dst.is_cols):
            return "(%s) / %d" % (i, dst.per_row)
        raise LoweringError(
            "region %s" % self.region.name,
            "%r holds one value per row but cannot be broadcast onto %r's layout" % (self.region.name, dst.region.name))


def list_slot(src, axis, i):
    """Which list (slot of the thread's lists) element i of accumulator or score fragment `src` feeds.

    The Python mirror of the device fragments' row_slot / col_slot (cake/warpgroup/fragments.cuh),
    for printers that unroll over a thread's elements: i is a Python int.
    """
    if src.layout == L.FRAGMENT_LAYOUT_WGMMA_ACC:
        return ((i & 3) >> 1) if axis == 1 else 2 * (i >> 2) + (i & 1)
    if src.layout == L.FRAGMENT_LAYOUT_MMA_ACC:
        ni = src.shape[1] // 8
        return 2 * ((i >> 2) // ni) + ((i & 3) >> 1)
    return 0


def declare_fragment(w, region):
    frag = Fragment(region)
    w.line(frag.decl)

"""The KMeans assignment's schedule variants: one family, its parameters, and what each admits.

Every variant is `tuned.assign_sm90a_tuned` at one parameter set:
- `d`, the feature tile (16, 32, 64, 128, 256): a problem with D features runs on the
  smallest tile >= D, so D = 32 does not pay for a 64-wide tile; TMA zero-fills the
  features past D.
- `block_k`, the centroid tile (32, 64, 128, 256): small K wastes less on padded
  centroids with small tiles; large K amortises each tile's epilogue with large ones.
- `consumers`, warpgroups of 64 points per block (1, 2, 4): fewer points per block
  spread small problems over more SMs; more share each centroid tile's L2 traffic.
- `stages` and `x_stages`, the centroid ring and the double-buffered points: the deepest
  rings that fit (not searched).
- `rows`, row blocks of 64 points per consumer (1, 2, 4; tuned.py): only on the narrow
  feature tiles (SMALL_D), where a tile's wgmma and epilogue are short and each
  consumer's serial chain per tile is the limit (docs/gpu_runs.md, 2026-12-02).
The narrow feature tiles also take the centroid tiles of SMALL_K_TILES (96, so that K of
65-96 does not pay for 128). A stage of c_sq (4 bytes a centroid) is a TMA destination and
must start 128-byte aligned: the 16-, 48-, 80- and 112-wide tiles once faulted on the H200
(misaligned address); compiler/ir/smem_layout.py now pads every TMA stage to 128 bytes, so
they could return (not measured since).
- The wide feature tiles (WIDE_D: 384, 512, 768, 1024, for D of 257-1024) run
  `tuned.assign_sm90a_streamed` (`dk` = SLAB): points and centroids stream together in
  64-feature slabs, none resident, two or four consumers, 32- to 128-wide centroid tiles
  (STREAMED). The resident form at these widths (one or two consumers, 16- to 64-wide
  tiles: all that fits beside 64 points of 768 features) single-buffers its points, and
  ran 0.37x-0.84x flashlib on 6 of the 10 wide shapes of the first validation.
A variant fits when the compiler finds its kernel fits the block (compiler/targets/fits.py,
what the verifier checks): lowering's shared-memory layout within the target's per-block
limit, and every consumer's live fragments within its register budget (with four
consumers their 112 registers hold block_k <= 128).
The kernel is persistent and bounds-checked in N and K, so every variant admits every
N >= 1 and K >= 1 up to its symbols' maxima, and every D <= d with D % 8 == 0 (a D that
is not runs on zero-padded copies: kernels/kmeans/dispatch.py).

`VARIANTS` is the set built ahead of time (Bazel's //kernels/kmeans:assign_prebuilt) and
searched by the tuner; `GENERIC` is the bounds-checked variant the dispatcher falls back
to when a chosen variant cannot be loaded.
"""

import dataclasses
import functools

from compiler.targets import fits as block_fits
from kernels.kmeans import tuned

D_TILES = (16, 32, 64, 128, 256)
K_TILES = (32, 64, 128, 256)
CONSUMERS = (1, 2, 4)
DTYPES = ("bf16", "f16")
SMALL_D = (16, 32)  # the feature tiles with the small-D extension below
SMALL_K_TILES = (96,)  # one row block per consumer, two or four consumers (c_sq stages: whole 128 B, for TMA)
ROWS = {2: (32, 64, 96, 128), 4: (32, 64)}  # rows per consumer -> centroid tiles (two or four consumers)
WIDE_D = (384, 512, 768, 1024)
SLAB = 64  # the streamed variants' slab width (one 128-byte swizzle panel of bf16/f16)
STREAMED = ((128, 4), (64, 4), (32, 4), (128, 2), (64, 2))  # (centroid tile, consumers) on every wide tile


@dataclasses.dataclass(frozen=True, order=True)
class AssignVariant:
    d: int
    block_k: int
    consumers: int
    stages: int
    x_stages: int
    rows: int = 1
    dk: int = 0  # > 0: tuned.assign_sm90a_streamed, points and centroids in slabs of dk features (x_stages unused)

    @property
    def name(self):
        if self.dk:
            return "d%d_k%d_c%d_s%d_dk%d" % (self.d, self.block_k, self.consumers, self.stages, self.dk)
        base = "d%d_k%d_c%d_s%d_x%d" % (self.d, self.block_k, self.consumers, self.stages, self.x_stages)
        return base + ("_r%d" % self.rows if self.rows > 1 else "")

    @property
    def block_n(self):
        return 64 * self.consumers * self.rows

    def params(self):
        if self.dk:
            return dict(d=self.d, block_k=self.block_k, consumers=self.consumers, stages=self.stages, dk=self.dk)
        return dict(d=self.d, block_k=self.block_k, consumers=self.consumers, stages=self.stages, x_stages=self.x_stages,
                    rows=self.rows)

    def builder(self):
        """The schedule builder this variant's params() are for."""
        return tuned.assign_sm90a_streamed if self.dk else tuned.assign_sm90a_tuned

    def kernel(self, dtype="bf16"):
        """The IR kernel (a cake.ir.v1.Kernel) of this variant for `dtype` ("bf16" or "f16")."""
        return _kernel(self, dtype)

    def admits(self, d):
        """True when this variant computes problems of `d` features (any N, K in the kernel's ranges)."""
        return 8 <= d <= self.d and d % 8 == 0

    def kp(self, k):
        """c_sq's padded length for K centroids (whole centroid tiles)."""
        return -(-k // self.block_k) * self.block_k


def fits(variant):
    """Whether the variant's kernel fits the target's block (compiler/targets/fits.py)."""
    return block_fits.fits(variant.builder()(**variant.params()))  # bf16; f16 takes the same bytes and registers


def make(d, block_k, consumers, rows=1, dk=0):
    """The variant at (d, block_k, consumers, rows; streamed in slabs of dk when dk) with the deepest rings that
    fit, or None if none fits."""
    rings = ((6, 0), (5, 0), (4, 0), (3, 0)) if dk else ((4, 2), (3, 2), (3, 1), (2, 1))
    for stages, x_stages in rings:
        v = AssignVariant(d, block_k, consumers, stages, x_stages, rows, dk)
        if fits(v):
            return v
    return None


def _family():
    out = []
    for d in D_TILES:
        for consumers in CONSUMERS:
            for block_k in K_TILES:
                v = make(d, block_k, consumers)
                if v is not None:
                    out.append(v)
    # The small-D extension (after the base family, whose order the tuning databases' neighbours never depend on).
    for d in SMALL_D:
        for consumers in (2, 4):
            shapes = [(block_k, 1) for block_k in SMALL_K_TILES]
            shapes += [(block_k, rows) for rows, tiles in sorted(ROWS.items()) for block_k in tiles]
            for block_k, rows in shapes:
                v = make(d, block_k, consumers, rows)
                if v is not None:
                    out.append(v)
    # The wide feature tiles (after the two above, for the same reason).
    for d in WIDE_D:
        for block_k, consumers in STREAMED:
            v = make(d, block_k, consumers, dk=SLAB)
            if v is not None:
                out.append(v)
    return tuple(out)


VARIANTS = _family()
BY_NAME = {v.name: v for v in VARIANTS}
# Bounds-checked in N and K and admitting every D <= 256, and every D <= 1024: the fallbacks of the kernel path.
GENERIC = make(256, 64, 2)
GENERIC_WIDE = make(1024, 64, 2, dk=SLAB)
UPDATE_MAX_D = 256  # the sorted update's widest lane layout (prebuilt_update_kernels); wider D update in torch


def generic(d):
    """The fallback variant for problems of `d` features (d % 8 == 0, d <= 1024)."""
    return GENERIC if GENERIC.admits(d) else GENERIC_WIDE


def d_tile(d):
    """The smallest feature tile that holds `d` features, or None above the largest."""
    for t in D_TILES + WIDE_D:
        if d <= t:
            return t
    return None


def candidates(d):
    """The variants a problem of `d` features (d % 8 == 0, d <= 1024) may run on, on its own tile."""
    t = d_tile(d)
    return tuple(v for v in VARIANTS if v.d == t)


@functools.lru_cache(maxsize=None)
def _kernel(variant, dtype):
    name = "kmeans_assign_%s_%s" % (variant.name, dtype)
    return variant.builder()(dtype=dtype, name=name, **variant.params())


def predicted_seconds(variant, shape):
    """The cost model's time for `variant` at `shape` (B, N, K, D) on the H200."""
    from compiler.analysis import analyze

    b, n, k, d = shape["B"], shape["N"], shape["K"], shape["D"]
    report = analyze(variant.kernel(), {"B": b, "N": n, "K": k, "KP": variant.kp(k), "D": d}, device="sm_90a/H200")
    return report.predicted_seconds


def rank(shape, top=None):
    """The admissible variants for `shape`, fastest first by the cost model (ties: smaller tiles first)."""
    scored = sorted((predicted_seconds(v, shape), v) for v in candidates(shape["D"]))
    ordered = [v for _, v in scored]
    return ordered[:top] if top else ordered


def flops(shape):
    return 2.0 * shape["B"] * shape["N"] * shape["K"] * shape["D"]


def padded_fraction(variant, shape):
    """The share of the tensor-core work the variant spends on padding (features and centroids)."""
    k, d = shape["K"], shape["D"]
    return 1.0 - (k * d) / (variant.kp(k) * variant.d)



def prebuilt_kernels():
    """Every variant in both dtypes: what //kernels/kmeans:assign_prebuilt builds ahead of time."""
    return [v.kernel(dtype) for v in VARIANTS for dtype in DTYPES]


def prebuilt_update_kernels():
    """The sorted update at every lane width the API uses (D up to 256, 32 features a step), both dtypes."""
    return [tuned.update_sorted(d=d, dtype=dtype) for d in range(32, UPDATE_MAX_D + 1, 32) for dtype in DTYPES]


def prebuilt_all():
    return prebuilt_kernels() + prebuilt_update_kernels()

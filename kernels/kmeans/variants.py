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
a 16-wide tile is laid out whole (the wide feature tiles below need it).
- The wide feature tiles (WIDE_D: 384, 512, 768, 1024, for D of 257-1024): the same
  kernel, the points resident in shared memory whole (one TMA box per 64-feature panel,
  the wgmma's K loop over all of them), so only one or two consumers and 16- to 64-wide
  centroid tiles fit beside them (WIDE_SHAPES).
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
# Feature tile -> (centroid tile, consumers) of the wide tiles: what fits beside 64 or 128 resident points of d features.
WIDE_SHAPES = {384: ((32, 1), (64, 1), (32, 2)), 512: ((32, 1), (16, 2), (32, 2)), 768: ((16, 1), (32, 1)),
               1024: ((16, 1),)}
WIDE_D = tuple(sorted(WIDE_SHAPES))


@dataclasses.dataclass(frozen=True, order=True)
class AssignVariant:
    d: int
    block_k: int
    consumers: int
    stages: int
    x_stages: int
    rows: int = 1

    @property
    def name(self):
        base = "d%d_k%d_c%d_s%d_x%d" % (self.d, self.block_k, self.consumers, self.stages, self.x_stages)
        return base + ("_r%d" % self.rows if self.rows > 1 else "")

    @property
    def block_n(self):
        return 64 * self.consumers * self.rows

    def params(self):
        return dict(d=self.d, block_k=self.block_k, consumers=self.consumers, stages=self.stages, x_stages=self.x_stages,
                    rows=self.rows)

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
    return block_fits.fits(tuned.assign_sm90a_tuned(**variant.params()))  # bf16; f16 takes the same bytes and registers


def make(d, block_k, consumers, rows=1):
    """The variant at (d, block_k, consumers, rows) with the deepest rings that fit, or None if none fits."""
    for stages, x_stages in ((4, 2), (3, 2), (3, 1), (2, 1)):
        v = AssignVariant(d, block_k, consumers, stages, x_stages, rows)
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
    for d, shapes in sorted(WIDE_SHAPES.items()):
        for block_k, consumers in shapes:
            v = make(d, block_k, consumers)
            if v is not None:
                out.append(v)
    return tuple(out)


VARIANTS = _family()
BY_NAME = {v.name: v for v in VARIANTS}
# Bounds-checked in N and K and admitting every D <= 256, and every D <= 1024: the fallbacks of the kernel path.
GENERIC = make(256, 64, 2)
GENERIC_WIDE = make(1024, 16, 1)
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
    return tuned.assign_sm90a_tuned(dtype=dtype, name=name, **variant.params())


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

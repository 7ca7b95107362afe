"""The static coverage proof: every shape of the declared domain maps to a path that computes it.

Over every bucket of kernels/kmeans/domain.json (D x K x B*N), at its awkward points
(the ends, 2^j - 1, 2^j, 2^j + 1, odd values that are multiples of no tile), with B = 1
and B = 3: the dispatcher, with the committed tuning database and cost-model plan, picks
a variant whose IR contract admits the shape: every symbol in its declared range and
every `require` true (the verifier checked each variant over those ranges:
tuned_test.py). D % 8 != 0 maps to the kernel at D rounded up to 8 (zero-padded
copies); every D of the domain (up to 1024) has a kernel.
"""

import functools
import os

from compiler.ir.expr import evaluate
from kernels.kmeans import dispatch, variants
from runtime.tuning_db import select

DOMAIN = dispatch.DOMAIN


def _committed_picker():
    paths = [os.path.join(dispatch.TUNING_DIR, f) for f in os.listdir(dispatch.TUNING_DIR)
             if f.endswith(".json") and os.path.join(dispatch.TUNING_DIR, f) != dispatch.CANDIDATES]
    return dispatch.Picker(select(paths, DOMAIN.op, "NVIDIA H200", None))


def _d_corners():
    out = set()
    for i in range(len(DOMAIN.buckets["D"])):
        out.update(DOMAIN.corners("D", i))
    return sorted(out)


@functools.lru_cache(maxsize=None)
def _contract(variant):
    c = variant.kernel().contract
    return [(s.name, s.min, s.max) for s in c.symbols], [(k.doc, k.expr) for k in c.constraints]


@functools.lru_cache(maxsize=None)
def _constraints_hold(variant, k, d):
    """(doc of the first violated require, or None): they read only K, KP and D."""
    _, constraints = _contract(variant)
    env = {"B": 1, "N": 1, "K": k, "KP": variant.kp(k), "D": d}
    for doc, expr in constraints:
        if not evaluate(expr, env):
            return doc
    return None


def _admits(variant, shape):
    env = dict(shape, KP=variant.kp(shape["K"]))
    for name, low, high in _contract(variant)[0]:
        if not low <= env[name] <= high:
            return "%s = %d outside [%d, %d]" % (name, env[name], low, high)
    return _constraints_hold(variant, shape["K"], shape["D"])


def test_every_d_maps_to_the_kernel_rounded_up_to_8_or_to_the_torch_path():
    for d in _d_corners() + list(range(1, 8)):
        dk = dispatch.kernel_d(d)
        if d > dispatch.MAX_KERNEL_D:
            assert dk is None, d
        else:
            assert dk % 8 == 0 and d <= dk < d + 8 and variants.d_tile(dk) is not None, d


def test_every_bucket_corner_maps_to_a_variant_whose_contract_admits_it():
    picker = _committed_picker()
    kernel_ds = sorted({dispatch.kernel_d(d) for d in _d_corners() if dispatch.kernel_d(d)})
    checked = 0
    failures = []
    for d in kernel_ds:
        for ki in range(len(DOMAIN.buckets["K"])):
            for k in DOMAIN.corners("K", ki):
                for ri in range(len(DOMAIN.buckets["B*N"])):
                    for rows in DOMAIN.corners("B*N", ri):
                        for b in (1, 3):
                            shape = {"B": b, "N": rows // b, "K": k, "D": d}
                            if DOMAIN.outside(shape):
                                continue
                            variant, how = picker._choose(b, shape["N"], k, d)
                            why = _admits(variant, shape)
                            checked += 1
                            if why:
                                failures.append("%s -> %s (%s): %s" % (shape, variant.name, how, why))
    assert not failures, "\n".join(failures[:20])
    assert checked > 100000, checked


def test_the_named_cells_are_in_the_domain_and_on_the_kernel_path():
    picker = _committed_picker()
    for cell in DOMAIN.cells:
        s = cell["shape"]
        dk = dispatch.kernel_d(s["D"])
        if dk is None:
            assert s["D"] > dispatch.MAX_KERNEL_D
            continue
        variant, _ = picker._choose(s["B"], s["N"], s["K"], dk)
        assert _admits(variant, dict(s, D=dk)) is None, cell["name"]


def test_the_generic_fallback_admits_every_kernel_path_d():
    for d in range(8, dispatch.MAX_KERNEL_D + 1, 8):
        assert variants.generic(d).admits(d)
    assert variants.generic(256) == variants.GENERIC and variants.generic(264) == variants.GENERIC_WIDE

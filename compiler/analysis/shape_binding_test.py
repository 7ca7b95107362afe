"""Tests of the shape binding: given shapes, representative defaults, constraint search and errors."""

import pytest

from compiler.analysis import shape_binding
from compiler.analysis.errors import AnalysisError
from compiler.ir.builder import KernelBuilder


def _kernel(*symbols, constraints=(), scalars=()):
    k = KernelBuilder("k", target="sm_90a")
    handles = {}
    for name, kwargs in symbols:
        handles[name] = k.symbol(name, **kwargs)
    for name in scalars:
        handles[name] = k.scalar(name, "i32")
    for make, doc in constraints:
        k.require(make(handles), doc)
    return k.build()


def test_given_shapes_win_and_the_rest_default():
    k = _kernel(("M", {}), ("N", {}))
    assert shape_binding.bind(k, {"M": 100}) == {"M": 100, "N": shape_binding.DEFAULT}


def test_specialized_symbols_take_their_value():
    k = _kernel(("D", {"value": 128, "min": 1, "max": 256}))
    assert shape_binding.bind(k) == {"D": 128}
    with pytest.raises(AnalysisError, match="D is specialized to 128, not 64"):
        shape_binding.bind(k, {"D": 64})


def test_defaults_are_clamped_to_the_range():
    k = _kernel(("D", {"min": 16, "max": 256}), ("B", {"min": 10000, "max": 20000}))
    assert shape_binding.bind(k) == {"D": 256, "B": 10000}


def test_unset_max_means_unbounded():
    k = _kernel(("N", {}))
    k.contract.symbols[0].max = 0
    assert shape_binding.bind(k) == {"N": shape_binding.DEFAULT}


def test_defaults_satisfy_constraints():
    k = _kernel(
        ("N", {"min": 1, "max": 1 << 20}),
        ("K", {"min": 1, "max": 1 << 20}),
        constraints=[
            (lambda s: s["N"] % 3 == 0, "N is a multiple of 3"),
            (lambda s: s["K"] > s["N"], "K exceeds N"),
        ],
    )
    env = shape_binding.bind(k)
    assert env["N"] % 3 == 0 and env["K"] > env["N"]
    assert env["N"] == 4098  # the first multiple of 3 at or above 4096 among the candidates


def test_violations_and_unknown_names_are_errors():
    k = _kernel(("M", {"min": 128, "max": 1024}), constraints=[(lambda s: s["M"] % 128 == 0, "whole tiles")])
    with pytest.raises(AnalysisError, match="M = 2048 is outside \\[128, 1024\\]"):
        shape_binding.bind(k, {"M": 2048})
    with pytest.raises(AnalysisError, match="constraints\\[0\\]: the shapes M=200 violate it \\(whole tiles\\)"):
        shape_binding.bind(k, {"M": 200})
    with pytest.raises(AnalysisError, match="shapes bind Q, which the kernel does not declare"):
        shape_binding.bind(k, {"Q": 1})
    with pytest.raises(AnalysisError, match="not a 64-bit integer"):
        shape_binding.bind(k, {"M": 1 << 70})
    with pytest.raises(AnalysisError, match="not a 64-bit integer"):
        shape_binding.bind(k, {"M": 256.0})


def test_scalar_params_are_bound_only_by_shapes():
    k = _kernel(("N", {}), scalars=["iters"], constraints=[(lambda s: s["iters"] > 0, "at least one")])
    assert shape_binding.bind(k, {"iters": 3}) == {"N": shape_binding.DEFAULT, "iters": 3}
    with pytest.raises(AnalysisError, match="unbound symbol 'iters'"):
        shape_binding.bind(k)

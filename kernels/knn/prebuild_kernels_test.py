"""The prebuilt KNN kernels: the list covers what the dispatcher runs for the domain's cells and tuned shapes,
a store holding a kernel answers with no nvcc, and a kernel compiled here is announced once."""

import random
import warnings

import pytest
import torch
from cake.compiler.v1 import artifact_pb2

from compiler.build import driver, prebuilt
from compiler.ir.hashing import ir_hash
from kernels.knn import dispatch, prebuild_kernels, schedules

SEARCH = (1, 128, 10_000_000, 128, 10)


@pytest.fixture(scope="module")
def listed():
    return set(prebuild_kernels.builders())


def test_the_headline_searches_are_prebuilt_in_every_metric_and_dtype(listed):
    for metric in prebuild_kernels.METRICS:
        for dtype in prebuild_kernels.DTYPES:
            for shape in (SEARCH, (1, 65536, 65536, 128, 10)):
                needed = set(dispatch.kernels_for(*shape, metric, False, dtype))
                assert needed and needed <= listed, (shape, metric, dtype, needed - listed)


def test_each_tuned_bucket_prebuilds_its_winning_variant(listed):
    for db in prebuild_kernels.tuning_databases():
        for entry in db.entries.values():
            s = entry["shape"]
            needed = set(dispatch.kernels_for(s["B"], s["Q"], s["M"], s["D"], s["k"], "l2", False, torch.bfloat16,
                                              config=entry["variant"]))
            assert needed <= listed, (entry["variant"], needed - listed)


def test_self_knn_cells_are_prebuilt_with_exclude_self(listed):
    assert set(dispatch.kernels_for(1, 100_000, 100_000, 50, 15, "l2", True, torch.float16)) <= listed


def test_each_kernel_is_listed_once():
    kernels = prebuild_kernels.prebuilt_kernels()
    assert len({ir_hash(k) for k in kernels}) == len(kernels) > 100


@pytest.fixture
def no_stores(monkeypatch, tmp_path):
    monkeypatch.setenv(prebuilt.ENV, "")
    monkeypatch.setattr(prebuilt, "REPO_STORE", str(tmp_path / "none"))
    monkeypatch.setattr(prebuilt, "search_path", lambda: [p for p in prebuilt.os.environ[prebuilt.ENV].split(prebuilt.os.pathsep) if p])
    monkeypatch.setattr(prebuilt, "_indexes", {})
    monkeypatch.setattr(prebuilt, "_warned", set())
    return tmp_path


def test_a_prebuilt_kernel_is_loaded_without_nvcc(no_stores, monkeypatch):
    builder, params = dispatch.merge_builder(10, "l2", torch.bfloat16, torch.int32, single=True)
    kernel = schedules.merge(**dict(params))
    store = str(no_stores / "store")
    prebuilt.write(store, artifact_pb2.CompiledKernel(target="sm_90a", ir_hash=ir_hash(kernel), cubin=b"\x7fELF-knn"))
    monkeypatch.setenv(prebuilt.ENV, store)
    monkeypatch.setattr(driver, "build", lambda *a, **kw: pytest.fail("nvcc ran although the kernel is prebuilt"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert dispatch.compiled(builder, params).cubin == b"\x7fELF-knn"


def test_a_kernel_compiled_here_is_announced_with_the_target_that_prebuilds_it(no_stores, monkeypatch):
    built = artifact_pb2.CompiledKernel(target="sm_90a", cubin=b"\x7fELF-jit")
    monkeypatch.setattr(driver, "cached", lambda plan, cache: None)
    monkeypatch.setattr(driver, "build", lambda kernel, cache=None: driver.BuildResult(built, []))
    builder, params = dispatch.merge_builder(7, "cos", torch.float16, torch.int64)
    with pytest.warns(prebuilt.JitCompile, match=r"no prebuilt sm_90a kernel knn merge .*//kernels/knn:search_prebuilt"):
        assert dispatch.compiled(builder, params) is built
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # once per kernel and target
        dispatch.compiled(builder, params)


def test_a_search_of_many_partial_lists_builds_its_fan_in():
    needed = dispatch.kernels_for(1, 128, 10_000_000, 128, 10)
    assert ("merge_fanin", (("k", 10), ("metric", "l2"))) in needed
    assert not any(b == "merge_fanin" for b, _ in dispatch.kernels_for(1, 65536, 65536, 128, 10))  # one list each


@pytest.fixture(scope="module")
def domain():
    return set(prebuild_kernels.domain_builders())


def test_the_domains_kernel_set_is_finite_and_small_enough_to_prebuild(domain):
    # The count the README gives (kernels/knn/README.md): the ladders' product over layouts, seeding, metrics, dtypes.
    assert 3000 < len(domain) < 6000, len(domain)


def test_shapes_drawn_from_the_domain_need_no_kernel_beyond_the_set(domain):
    pickers = [dispatch.Picker([db]) for db in prebuild_kernels.tuning_databases()]
    rng = random.Random(16)
    shapes = dispatch.DOMAIN.sample(rng, 300, accept=lambda s: s["k"] <= 32 and s["k"] <= s["M"])
    for s in shapes:
        b, q, m, d, k = (s[n] for n in "BQMDk")
        exclude_self = rng.random() < 0.2 and q <= m <= q * 4
        if exclude_self:
            m = q
        dtype = rng.choice(prebuild_kernels.INPUT_DTYPES)
        if dtype == torch.float32:
            d = min(d, 336)
        rank_d = dispatch.rank_shape(d, dtype)[0]
        configs = {v.name for v, _ in (p.pick(b, q, m, rank_d, k) for p in pickers) if v is not None} | {None}
        for config in configs:
            needed = set(dispatch.kernels_for(b, q, m, d, k, rng.choice(prebuild_kernels.METRICS), exclude_self, dtype,
                                              rng.choice(prebuild_kernels.INDEX_DTYPES), config=config))
            assert needed <= domain, ((b, q, m, d, k, exclude_self, dtype, config), needed - domain)

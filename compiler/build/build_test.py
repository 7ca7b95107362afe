"""Build tests: nvcc/ptxas per target, the ptxas report, build diagnostics at IR paths, the cache."""

import concurrent.futures
import tempfile

import pytest
from cake.compiler.v1 import artifact_pb2

from compiler.build import cache as compile_cache
from compiler.build import ptxas_report
from compiler.build.driver import build
from compiler.ir.builder import KernelBuilder, block, coord
from kernels.gemm.schedules import gemm_sm90a


def _spilling_kernel():
    """A per-thread array of 224 floats in a role capped at 128 registers: ptxas must spill."""
    k = KernelBuilder("spiller", target="sm_90a")
    n = k.symbol("N", min=256, max=1 << 20)
    k.contract(math="y[i] = sum_j x[i] * j", reference="none", metric="rel_l2", tolerance=1e-3)
    k.require(n % 256 == 0, "whole blocks")
    x = k.tensor("x", "f32", [n])
    y = k.tensor("y", "f32", [n], access="write")
    k.grid(n // 256)
    k.min_blocks_per_sm(2)
    big = k.registers("big", "f32", [224], layout="per_thread", owner="hungry")
    tot = k.registers("tot", "f32", [1], layout="per_thread", owner="hungry")
    with k.role("idle", "producer", warps=4) as r:
        r.block_sync()
    with k.role("hungry", "compute", warps=4) as r:
        r.block_sync()
        r.copy(x[block.x * 256 + r.thread], tot.all)
        r.ew("mul", big.all, tot.all, coord(0))
        r.ew("exp", big.all, big.all)
        r.reduce("sum", big.all, tot.all, axis=0, scope="thread")
        # Every element stays live across the reduction: 224 values in a 128-register budget.
        r.ew("div", big.all, big.all, tot.all)
        r.ew("sqrt", big.all, big.all)
        r.reduce("max", big.all, tot.all, axis=0, scope="thread")
        r.copy(tot.all, y[block.x * 256 + r.thread])
    return k.build()


def _fresh_cache():
    return compile_cache.CompileCache(tempfile.mkdtemp(prefix="cake-cache-test-"))


def test_gemm_builds_with_resource_report_and_metadata():
    result = build(gemm_sm90a(), cache=_fresh_cache())
    assert result.ok, [d.message for d in result.diagnostics]
    c = result.compiled
    assert c.target == "sm_90a" and c.cubin[:4] == b"\x7fELF"
    assert c.resources.registers > 0 and c.resources.spill_store_bytes == 0
    assert "wgmma.mma_async" in c.ptx and "cp.async.bulk.tensor" in c.ptx
    assert c.launch.symbol == "cake_gemm_bf16_sm90a"
    assert list(c.launch.block) == [384, 1, 1]
    assert [a.kind for a in c.launch.args][-2:] == [artifact_pb2.ARG_KIND_TENSOR_MAP] * 2
    assert not c.cache_hit


def test_spilling_role_is_named_with_a_fix_hint():
    # The verifier refuses the role (CAKE-RES-005); the build alone still names it when ptxas spills.
    assert "CAKE-RES-005" in [d.id for d in build(_spilling_kernel(), cache=_fresh_cache()).diagnostics]
    result = build(_spilling_kernel(), cache=_fresh_cache(), verify=False)
    spills = [d for d in result.diagnostics if d.id == "CAKE-BUILD-003"]
    assert result.ok and len(spills) == 1, [(d.id, d.message) for d in result.diagnostics]
    assert spills[0].path == "kernel.roles[1]"
    assert "hungry" in spills[0].message and "register budget" in spills[0].fix_hint


def test_register_starved_wgmma_is_reported_at_the_consumer_role():
    k = gemm_sm90a(stages=2)
    k.launch.min_blocks_per_sm = 2
    for role in k.roles:
        role.registers = 0
    # 80 registers at __launch_bounds__(384, 2), for a 128-register accumulator: the verifier says so
    result = build(k, cache=_fresh_cache())
    assert not result.ok
    assert [(d.id, d.path) for d in result.diagnostics] == [("CAKE-RES-005", "kernel.roles[1]")]
    # and so does the build on its own, from ptxas' refusal
    result = build(k, cache=_fresh_cache(), verify=False)
    assert not result.ok
    assert [(d.id, d.path) for d in result.diagnostics] == [("CAKE-BUILD-003", "kernel.roles[1]")]


def test_a_register_over_commit_is_the_verifiers_res_004_not_a_lowering_error():
    k = gemm_sm90a()
    k.roles[0].registers = 48  # 128 x 48 + 256 x 232 = 65,536 > the 384 x 168 the block is launched with
    result = build(k, cache=_fresh_cache())
    assert not result.ok
    assert [(d.id, d.path) for d in result.diagnostics] == [("CAKE-RES-004", "kernel.roles[1]")]
    lowered_only = build(k, cache=_fresh_cache(), verify=False)
    assert [d.id for d in lowered_only.diagnostics] == ["CAKE-BUILD-001"]


def test_lowering_errors_point_at_the_op():
    k = gemm_sm90a()
    k.target = 1  # sm_80: no transaction-count mbarriers, no TMA, no wgmma
    assert "CAKE-TARGET-002" in [d.id for d in build(k, cache=_fresh_cache()).diagnostics]  # verified: refused first
    result = build(k, cache=_fresh_cache(), verify=False)
    assert not result.ok
    d = result.diagnostics[0]
    assert d.id == "CAKE-BUILD-001"
    assert d.path == "kernel.roles[0].body[0].branch.then_body[2].fence"  # fence.mbarrier_init, the first sm_90 op
    assert "sm_80" in d.message


def test_cache_hits_after_a_build_and_survives_a_new_cache_object():
    directory = tempfile.mkdtemp()
    first = build(gemm_sm90a(), cache=compile_cache.CompileCache(directory))
    second = build(gemm_sm90a(), cache=compile_cache.CompileCache(directory))
    assert not first.compiled.cache_hit and second.compiled.cache_hit
    assert first.compiled.cubin == second.compiled.cubin


def test_cache_concurrent_writers_leave_one_whole_entry():
    cache = _fresh_cache()
    entries = [artifact_pb2.CompiledKernel(target="sm_90a", cubin=bytes([i]) * 100000) for i in range(16)]
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda e: cache.put("k" * 64, e), entries))
    got = cache.get("k" * 64)
    assert got is not None and got in entries


def test_an_unwritable_cache_builds_anyway_with_one_warning(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")  # a directory under a file cannot be made, even by root
    cache = compile_cache.CompileCache(str(blocker / "compile"))
    with pytest.warns(compile_cache.CacheNotWritable, match="cannot be written") as caught:
        first = build(gemm_sm90a(), cache=cache)
        second = build(gemm_sm90a(), cache=cache)
    assert first.ok and second.ok and not second.compiled.cache_hit
    assert len(caught) == 1 and str(blocker / "compile") in str(caught[0].message)


def test_the_default_cache_lives_in_the_cache_root(monkeypatch, tmp_path):
    monkeypatch.setenv("CAKE_CACHE_DIR", str(tmp_path / "root"))
    assert compile_cache.default_cache().directory == str(tmp_path / "root" / "compile")


def test_corrupt_cache_entry_is_a_miss():
    cache = _fresh_cache()
    cache.put("a" * 64, artifact_pb2.CompiledKernel(target="x"))
    with open(cache._path("a" * 64), "wb") as f:
        f.write(b"\xff\xff not a proto")
    assert cache.get("a" * 64) is None


@pytest.mark.parametrize(
    "report,expect",
    [
        (
            "ptxas info    : Compiling entry function 'k' for 'sm_90a'\n"
            "ptxas info    : Function properties for k\n"
            "    16 bytes stack frame, 8 bytes spill stores, 12 bytes spill loads\n"
            "ptxas info    : Used 255 registers, used 1 barriers, 4104 bytes smem, 400 bytes cmem[0]\n",
            dict(registers=255, barriers=1, static_shared_bytes=4104, constant_bytes=400,
                 stack_frame_bytes=16, spill_store_bytes=8, spill_load_bytes=12),
        ),
    ],
)
def test_ptxas_report_parse(report, expect):
    usage = ptxas_report.parse(report)["k"]
    for field, value in expect.items():
        assert getattr(usage, field) == value

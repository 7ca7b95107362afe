"""The workers' tasks as plain functions: unverified kernels, lowering failures, a missing nvcc."""

import pytest
from cake.compiler.v1 import compiler_service_pb2 as pb

from compiler.build import cache as compile_cache
from compiler.build import driver, nvcc
from compiler.ir.text import parse_kernel
from compiler.service import errors, work
from compiler.testing.service_programs import copy_program


def _stages():
    seen = []
    return seen, seen.append


def _compile(kernel, skip_verify, cache=None, source_only=False):
    seen, stage = _stages()
    request = pb.CompileRequest(program=pb.Program(kernel=kernel), skip_verify=skip_verify, source_only=source_only)
    return work.compile(request.SerializeToString(), stage, cache), seen


def _response(outcome):
    assert isinstance(outcome, work.Done)
    return pb.CompileResponse.FromString(outcome.response)


def test_stages_are_named_as_they_begin(tmp_path):
    outcome, seen = _compile(parse_kernel(copy_program("work_stages")).kernel, False,
                             compile_cache.CompileCache(str(tmp_path)))
    assert seen == ["parse", "verify", "lower"]
    assert isinstance(outcome, work.NeedsNvcc) and outcome.kernel == "work_stages" and outcome.target == "sm_90a"
    assert "cake_work_stages" in outcome.source


def test_skip_verify_with_an_unset_expression_is_a_diagnostic_at_its_op():
    kernel = parse_kernel(copy_program()).kernel
    loop = kernel.roles[1].body[1].loop
    loop.end.Clear()
    response = _response(_compile(kernel, True)[0])
    assert not response.HasField("compiled")
    [d] = response.diagnostics
    assert (d.id, d.path) == ("CAKE-BUILD-001", "kernel.roles[1].body[1].loop")


def test_skip_verify_with_a_kernel_lowering_crashes_on_answers_with_the_verifier():
    kernel = parse_kernel(copy_program()).kernel
    kernel.params[0].dtype = 0  # unset: lowering has no C++ type for it (a KeyError inside lowering)
    response = _response(_compile(kernel, True)[0])
    assert not response.HasField("compiled")
    assert ("CAKE-STRUCT-004", "kernel.params[0]") in {(d.id, d.path) for d in response.diagnostics}


def test_a_lowering_crash_on_a_verified_kernel_is_a_bug(monkeypatch):
    monkeypatch.setattr(driver, "plan", lambda kernel: (_ for _ in ()).throw(KeyError("lowering bug")))
    with pytest.raises(KeyError):
        _compile(parse_kernel(copy_program()).kernel, False)
    with pytest.raises(KeyError):  # skipped, but the kernel verifies clean: still a bug
        _compile(parse_kernel(copy_program()).kernel, True)


def test_without_nvcc_compile_is_failed_precondition(monkeypatch):
    def missing():
        raise nvcc.NvccNotFound("nvcc not found: install the CUDA 13 toolkit or set CUDA_HOME")

    monkeypatch.setattr(driver, "toolchain_id", missing)
    with pytest.raises(errors.ServiceError) as e:
        _compile(parse_kernel(copy_program()).kernel, False)
    assert e.value.code.name == "FAILED_PRECONDITION" and e.value.details[0].reason == "NVCC_NOT_FOUND"


def test_source_only_needs_no_nvcc_and_no_cache(monkeypatch, tmp_path):
    def missing():
        raise nvcc.NvccNotFound("nvcc not found")

    monkeypatch.setattr(driver, "toolchain_id", missing)
    cache = compile_cache.CompileCache(str(tmp_path))
    outcome, seen = _compile(parse_kernel(copy_program("work_source")).kernel, False, cache, source_only=True)
    assert seen == ["parse", "verify", "lower"] and outcome.key is None  # nothing for the memo to remember
    compiled = _response(outcome).compiled
    assert "cake_work_source" in compiled.cuda_source and not compiled.cubin
    assert not any(tmp_path.iterdir())


def test_a_lowering_error_of_a_source_only_compile_is_a_diagnostic():
    kernel = parse_kernel(copy_program()).kernel
    kernel.roles[1].body[1].loop.end.Clear()
    response = _response(_compile(kernel, True, source_only=True)[0])
    assert not response.HasField("compiled")
    assert [(d.id, d.path) for d in response.diagnostics] == [("CAKE-BUILD-001", "kernel.roles[1].body[1].loop")]


def test_rules_and_calibrate_name_their_stages():
    seen, stage = _stages()
    request = pb.ListRulesRequest(extra_rules_json='[{"id": "CAKE-LEARNED-900", "doc": "d", "message": "m",'
                                                   ' "fix_hint": "f", "when": {"feature": "role.warps", "op": ">",'
                                                   ' "value": 8}}]')
    assert pb.ListRulesResponse.FromString(work.list_rules(request.SerializeToString(), stage)).rules[-1].id == \
        "CAKE-LEARNED-900"
    sample = pb.CalibrationSample(features={"launch_s": 2e-6, "dram_read_unique_s": 1e-5}, measured_seconds=2e-5)
    response = pb.CalibrateResponse.FromString(
        work.calibrate(pb.CalibrateRequest(samples=[sample]).SerializeToString(), stage))
    assert seen == ["rules", "parse", "calibrate"] and response.error_after < response.error_before


def test_skip_verify_analysis_of_a_broken_kernel_answers_with_the_verifier():
    kernel = parse_kernel(copy_program()).kernel
    del kernel.roles[:]
    kernel.launch.grid[0].Clear()
    request = pb.AnalyzeRequest(program=pb.Program(kernel=kernel), skip_verify=True)
    response = pb.AnalyzeResponse.FromString(work.analyze(request.SerializeToString(), lambda stage: None))
    assert not response.HasField("report") and response.diagnostics

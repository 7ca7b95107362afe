"""Every RPC through the typed client against a real server process on an ephemeral port."""

import json

import grpc
import pytest

from cake.compiler.v1 import compiler_service_pb2 as service_pb2
from cake.compiler.v1 import diagnostics_pb2
from cake.ir.v1 import ir_pb2

from compiler import analysis
from compiler.ir.text import parse_kernel
from compiler.service.client import CompilerServiceError, start_local_server
from compiler.targets import TARGETS
from compiler.testing.service_programs import LAUNCH_LINE, copy_program


@pytest.fixture(scope="module")
def cc(tmp_path_factory):
    with start_local_server(cache_dir=tmp_path_factory.mktemp("cache"), timeout=120) as client:
        yield client


def _broken_text():
    """copy_program with the divisibility constraint removed: CAKE-CONTRACT-004 at the grid."""
    lines = copy_program().splitlines(True)
    return "".join(l for l in lines if "constraint" not in l)


def test_verify_clean_program_in_each_form(cc):
    text = copy_program()
    kernel = parse_kernel(text).kernel
    for program in (text, kernel, kernel.SerializeToString()):
        r = cc.verify(program)
        assert r.valid and list(r.diagnostics) == []


def test_verify_diagnostics_carry_text_locations(cc):
    r = cc.verify(_broken_text())
    assert not r.valid
    [d] = [d for d in r.diagnostics if d.id == "CAKE-CONTRACT-004"]
    assert d.path == "kernel.launch.grid[0]"
    assert d.severity == diagnostics_pb2.SEVERITY_ERROR
    assert d.location.line == LAUNCH_LINE - 1  # one line (the constraint) removed above it
    assert d.fix_hint


def test_analyze_reports_cost_at_shapes(cc):
    r = cc.analyze(copy_program(), {"N": 1 << 24}, device="H100-SXM")
    assert list(r.diagnostics) == []
    assert r.report.shapes["N"] == 1 << 24
    assert r.report.device == "sm_90a/H100-SXM"
    assert r.report.predicted_seconds > 0


def test_analyze_missing_information_is_a_diagnostic(cc):
    r = cc.analyze(copy_program(), {"N": 100})
    assert not r.HasField("report")
    [d] = r.diagnostics
    assert (d.id, d.path, d.location.line) == ("CAKE-ANALYSIS-001", "kernel.contract.symbols[0]", 5)


def test_analyze_refuses_a_kernel_that_fails_verification(cc):
    r = cc.analyze(_broken_text())
    assert not r.HasField("report")
    assert "CAKE-CONTRACT-004" in [d.id for d in r.diagnostics]


def test_compile_returns_every_artifact_then_hits_the_cache(cc):
    program = copy_program("service_compile", 3)
    first = cc.compile(program)
    c = first.compiled
    assert c.target == "sm_90a" and not c.cache_hit
    assert c.cubin[:4] == b"\x7fELF"
    assert ".entry cake_service_compile" in c.ptx
    assert "cake_service_compile" in c.cuda_source
    assert c.launch.symbol == "cake_service_compile" and list(c.launch.block) == [96, 1, 1]
    assert c.resources.registers > 0
    assert c.ir_hash and c.toolchain
    second = cc.compile(program).compiled
    assert second.cache_hit and second.cubin == c.cubin


def test_compile_source_only_lowers_without_nvcc_or_the_cache(cc):
    program = copy_program("service_source_only")
    r = cc.compile(program, source_only=True)
    c = r.compiled
    assert list(r.diagnostics) == [] and not (c.cubin or c.ptx or c.toolchain or c.cache_hit)
    assert c.target == "sm_90a" and "cake_service_source_only" in c.cuda_source and c.ir_hash
    assert c.launch.symbol == "cake_service_source_only"
    full = cc.compile(program).compiled
    assert not full.cache_hit and (full.cuda_source, full.launch) == (c.cuda_source, c.launch)
    assert "CAKE-CONTRACT-004" in [d.id for d in cc.compile(_broken_text(), source_only=True).diagnostics]


def test_compile_retargets(cc):
    c = cc.compile(copy_program("service_retarget"), target="sm_100a").compiled
    assert c.target == "sm_100a" and c.cubin


def test_compile_of_a_kernel_failing_verification_is_ok_with_diagnostics(cc):
    r = cc.compile(_broken_text())
    assert not r.HasField("compiled")
    assert "CAKE-CONTRACT-004" in [d.id for d in r.diagnostics]


def test_compile_of_an_op_the_target_lacks_fails_verification(cc):
    r = cc.compile(copy_program("service_sm80"), target="sm_80")
    assert not r.HasField("compiled")
    assert any(d.id.startswith("CAKE-TARGET") and d.path.endswith("tma_load") for d in r.diagnostics)


def test_list_targets(cc):
    targets = cc.list_targets().targets
    assert [t.name for t in targets] == list(TARGETS)
    sm90 = targets[1]
    assert (sm90.ir_target, sm90.compute_capability_major, sm90.compute_capability_minor) == (ir_pb2.TARGET_SM_90A, 9, 0)
    assert "wgmma" in [f.name for f in sm90.features] and "wgmma" not in [f.name for f in targets[2].features]
    h200 = {d.name: d for d in sm90.devices}["H200"]
    assert h200.is_default and h200.key == "sm_90a/H200" and h200.figures["sms"] == 132
    assert h200.sources["sms"]


def test_list_rules(cc):
    rules = {r.id: r for r in cc.list_rules().rules}
    r = rules["CAKE-CONTRACT-004"]
    assert r.category == diagnostics_pb2.CATEGORY_CONTRACT and r.severity == diagnostics_pb2.SEVERITY_ERROR
    assert r.doc and r.fix_hint


LEARNED = {"id": "CAKE-LEARNED-900", "severity": "error", "doc": "no two-stage rings",
           "when": {"feature": "region.stages", "op": "==", "value": 2}, "message": "m", "fix_hint": "f"}


def test_list_rules_with_rules_as_data_lists_them_last(cc):
    built_in = [r.id for r in cc.list_rules().rules]
    rules = cc.list_rules(extra_rules=[LEARNED]).rules
    assert [r.id for r in rules] == built_in + ["CAKE-LEARNED-900"]
    assert (rules[-1].severity, rules[-1].doc, rules[-1].fix_hint) == (diagnostics_pb2.SEVERITY_ERROR,
                                                                        "no two-stage rings", "f")


def test_list_rules_refuses_malformed_rules(cc):
    for rules, why in [("[{", "Expecting"), ([dict(LEARNED, id="CAKE-RES-004")], "id already taken"),
                       ([dict(LEARNED, when={"feature": "region.colour", "op": "==", "value": 1})], "region.colour")]:
        with pytest.raises(CompilerServiceError) as e:
            cc.list_rules(extra_rules=rules)
        assert e.value.code == grpc.StatusCode.INVALID_ARGUMENT
        [(field, description)] = e.value.field_violations
        assert field == "extra_rules_json" and why in description


SIZE = {"N": 1 << 24}


def _samples(slowdown):
    """(features, seconds) of copy programs of 1..32 rounds "measured" at `slowdown` times their prediction."""
    out = []
    for rounds in (1, 2, 4, 8, 16, 32):
        kernel = parse_kernel(copy_program("service_calibrate", rounds)).kernel
        out.append((analysis.features(kernel, SIZE), analysis.analyze(kernel, SIZE).predicted_seconds * slowdown))
    return out


def test_calibrate_refits_the_constants_to_measurements(cc):
    samples = _samples(1.5)
    r = cc.calibrate(samples[:4], samples[4:], version="slower")
    assert r.error_after < r.error_before / 10 and r.error_before > 0.3
    refit = json.loads(r.calibration_json)
    assert refit["version"] == "slower" and dict(r.constants) == {n: c["value"] for n, c in refit["constants"].items()}
    report = cc.analyze(copy_program("service_calibrate", 1), SIZE, calibration=r.calibration_json).report
    assert report.calibration == "slower" and abs(report.predicted_seconds / samples[0][1] - 1) < 0.05
    assert json.loads(cc.calibrate(samples).calibration_json)["version"].endswith("+refit")


def test_calibrate_refuses_what_it_cannot_fit(cc):
    good = _samples(1.0)[0]
    cases = [
        ([], [], None, "samples", "at least one"),
        ([(good[0], -1.0)], [], None, "samples[0]", "positive number of seconds"),
        ([good, (dict(good[0], nope_s=1.0), 1e-5)], [], None, "samples[1]", "unknown features nope_s"),
        ([good], [({"launch_s": float("inf")}, 1e-5)], None, "held_out[0]", "finite and non-negative"),
        ([({}, 1e-5)], [], None, "samples[0]", "predict no time"),
        ([good], [], {"version": "v", "constants": {"eff_dram": {"value": 2.0}}}, "calibration_json", "eff_dram"),
    ]
    for samples, held_out, calibration, field, why in cases:
        with pytest.raises(CompilerServiceError) as e:
            cc.calibrate(samples, held_out, calibration=calibration)
        assert e.value.code == grpc.StatusCode.INVALID_ARGUMENT
        [(got, description)] = e.value.field_violations
        assert (got, why in description) == (field, True), description


def test_list_primitives(cc):
    prims = {p.name: p for p in cc.list_primitives().primitives}
    assert list(prims) == [f.name for f in ir_pb2.Op.DESCRIPTOR.oneofs_by_name["kind"].fields]
    assert all(p.doc and p.message_doc and p.targets for p in prims.values())
    tma = prims["tma_load"]
    assert "cp.async.bulk.tensor" in tma.doc and tma.message == "cake.ir.v1.TmaLoad"
    assert tma.feature == "tma" and list(tma.targets) == ["sm_90a", "sm_100a"]
    variants = {v.name: v for v in prims["mma"].variants}
    assert list(variants["MMA_KIND_WGMMA"].targets) == ["sm_90a"]
    assert list(variants["MMA_KIND_TCGEN05"].targets) == ["sm_100a"]


def test_syntax_error_names_its_line_and_column(cc):
    text = copy_program().replace("launch {", "launch {{", 1)
    with pytest.raises(CompilerServiceError) as e:
        cc.verify(text)
    assert e.value.code == grpc.StatusCode.INVALID_ARGUMENT
    [(field, description)] = e.value.field_violations
    assert field == "program.text" and description.startswith("%d:" % LAUNCH_LINE)


def test_missing_program_unknown_target_and_device_are_invalid_arguments(cc):
    cases = [
        (lambda: cc.verify(service_pb2.Program()), "program"),
        (lambda: cc.compile(copy_program(), target="sm_70"), "target"),
        (lambda: cc.analyze(copy_program(), device="V100"), "device"),
    ]
    for call, field in cases:
        with pytest.raises(CompilerServiceError) as e:
            call()
        assert e.value.code == grpc.StatusCode.INVALID_ARGUMENT
        assert [f for f, _ in e.value.field_violations] == [field]
    with pytest.raises(CompilerServiceError) as e:
        cc.compile(copy_program(), target="sm_70")
    assert "sm_80, sm_90a, sm_100a" in e.value.field_violations[0][1]


def test_a_compile_past_its_deadline_is_deadline_exceeded(cc):
    with pytest.raises(CompilerServiceError) as e:
        cc.compile(copy_program("service_deadline", 5), timeout=0.2)
    assert e.value.code == grpc.StatusCode.DEADLINE_EXCEEDED


def test_access_log_records_each_call_with_its_request_id(cc):
    import json

    cc.list_rules()
    records = [json.loads(l) for l in cc.server.log().splitlines() if '"event": "rpc"' in l]
    last = [r for r in records if r["method"].endswith("/ListRules")][-1]
    assert last["status"] == "OK" and last["peer"].startswith("ipv4:127.0.0.1") and len(last["request_id"]) == 16
    assert last["duration_ms"] >= 0


def test_compile_unverified_with_an_unset_expression_is_a_diagnostic_not_internal(cc):
    kernel = parse_kernel(copy_program("unset_expr")).kernel
    kernel.roles[1].body[1].loop.end.Clear()
    r = cc.compile(kernel, skip_verify=True)
    assert not r.HasField("compiled")
    assert [(d.id, d.path) for d in r.diagnostics] == [("CAKE-BUILD-001", "kernel.roles[1].body[1].loop")]

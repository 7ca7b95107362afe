"""Every RPC through the typed client against a real server process on an ephemeral port."""

import grpc
import pytest

from cake.compiler.v1 import compiler_service_pb2 as service_pb2
from cake.compiler.v1 import diagnostics_pb2
from cake.ir.v1 import ir_pb2

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

"""The public API: sorted diagnostics, has_errors, formatting, locations, and internal failures as diagnostics."""

import logging

from cake.compiler.v1 import diagnostics_pb2
from cake.ir.v1 import ir_pb2

from compiler.ir.text import parse_kernel, print_kernel
from compiler.testing.verifier_kernels import ring
from compiler.verify import RULES, format_diagnostic, has_errors, registry, report, verify
from compiler.verify.registry import Finding, Rule


def test_clean_kernel_has_no_diagnostics():
    assert verify(ring()) == []
    assert not has_errors([])


def test_diagnostics_are_sorted_by_tree_order_then_id():
    k = ring()
    k.name = "bad name"  # STRUCT-001 at `kernel`
    k.regions[0].shape[0] = 0  # STRUCT-006 at kernel.regions[0]
    k.contract.tolerance = 0.5  # CONTRACT-007 at kernel.contract
    diags = verify(k)
    paths = [d.path for d in diags]
    assert paths == sorted(paths, key=report.path_key)
    assert paths[0] == "kernel" and "kernel.contract" in paths and "kernel.regions[0]" in paths
    assert paths.index("kernel.contract") < paths.index("kernel.regions[0]")  # contract is field 2, regions 6
    assert has_errors(diags)


def test_format_with_location_notes_and_fix():
    k = ring(release=False)
    parsed = parse_kernel(print_kernel(k), "ring.cake")
    (d,) = verify(parsed.kernel, parsed.source_map)
    text = format_diagnostic(d, "ring.cake")
    first, *rest = text.splitlines()
    assert first.startswith("error[CAKE-SYNC-004] kernel.roles[0].body[2].branch.then_body[0].loop.body[0].mbarrier_wait (ring.cake:")
    assert d.location.line == parsed.source_map.lookup(d.path)[0]
    assert any(line.startswith("  note: `empty` is declared here at kernel.barriers[1] (ring.cake:") for line in rest)
    assert rest[-1].startswith("  fix: ")
    assert "(%d:%d)" % (d.location.line, d.location.column) in format_diagnostic(d)


def test_without_source_map_locations_are_unset():
    (d,) = verify(ring(release=False))
    assert not d.HasField("location")
    assert "(" not in format_diagnostic(d).splitlines()[0].split(":")[0]


def test_a_failing_rule_becomes_an_internal_diagnostic(caplog):
    def broken(ctx):
        raise RuntimeError("secret internals")
        yield  # a generator, like every check

    rule = Rule("CAKE-TEST-001", diagnostics_pb2.CATEGORY_STRUCTURE, diagnostics_pb2.SEVERITY_ERROR, "doc", "fix", broken)
    with caplog.at_level(logging.ERROR, logger="cake.verify"):
        (d,) = verify(ring(), extra_rules=[rule])
    assert d.id == registry.INTERNAL_ID and d.category == diagnostics_pb2.CATEGORY_INTERNAL
    assert "CAKE-TEST-001" in d.message and "secret internals" not in d.message
    incident = d.message.split("incident ")[1].split(")")[0]
    assert incident in caplog.text and "RuntimeError: secret internals" in caplog.text


def test_extra_rules_run_and_are_located():
    rule = Rule("CAKE-TEST-002", diagnostics_pb2.CATEGORY_CONTRACT, diagnostics_pb2.SEVERITY_WARNING, "doc", "fix",
                lambda ctx: [Finding("kernel.contract", "hello")])
    (d,) = verify(ring(), extra_rules=[rule])
    assert (d.id, d.severity, d.path, d.message, d.fix_hint) == (
        "CAKE-TEST-002", diagnostics_pb2.SEVERITY_WARNING, "kernel.contract", "hello", "fix")


def test_registry_ids_are_unique_and_well_formed():
    ids = [r.id for r in RULES]
    assert len(ids) == len(set(ids))
    for r in RULES:
        assert r.doc and r.fix_hint and r.id.startswith("CAKE-") and r.category_name and r.severity_name


def test_empty_kernel_is_diagnosed_not_raised():
    diags = verify(ir_pb2.Kernel())
    ids = {d.id for d in diags}
    assert {"CAKE-TARGET-001", "CAKE-STRUCT-013", "CAKE-STRUCT-001"} <= ids
    assert registry.INTERNAL_ID not in ids


def test_a_huge_role_is_a_resource_error_not_a_walk_over_its_threads():
    k = ring()
    k.roles[1].warps = 2**31 - 1  # the outputs check and the model would walk every thread (out of memory)
    diags = verify(k)
    assert [(d.id, d.path) for d in diags if d.id == "CAKE-RES-002"] == [("CAKE-RES-002", "kernel.roles[1]")]
    assert registry.INTERNAL_ID not in {d.id for d in diags}


def test_a_loop_of_more_trips_than_sys_maxsize_is_checked_not_raised():
    k = ring()
    loop = next(op.loop for op in k.roles[1].body if op.WhichOneof("kind") == "loop")
    loop.start.int = -2**63  # len() of its range would raise OverflowError
    ids = {d.id for d in verify(k)}
    assert registry.INTERNAL_ID not in ids and ids

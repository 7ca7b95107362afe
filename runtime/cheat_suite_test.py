"""The cheat suite's table: every cheat the issue names, each with a binding and an identity."""

from runtime import failures, names
from runtime.testing import cheat_suite


def test_every_cheat_has_a_binding_and_a_distinct_identity():
    for cheat in cheat_suite.CHEATS:
        assert callable(names.resolve(cheat.binding)), cheat.name
    hashes = {cheat_suite.ir_hash(c) for c in cheat_suite.CHEATS}
    assert len(hashes) == len(cheat_suite.CHEATS)


def test_the_suite_covers_every_cheat_the_issue_names():
    expected = {c.expected for c in cheat_suite.CHEATS}
    assert expected == {
        None,
        failures.STALE_RESULT,
        failures.UNWRITTEN_OUTPUT,
        failures.WRONG_RESULT,
        failures.SHAPE_GENERALIZATION,
        failures.SIDE_STREAM,
        failures.INPUT_MUTATED,
        failures.NAN_OR_INF,
        failures.ILLEGAL_ADDRESS,
        failures.TIMEOUT,
    }

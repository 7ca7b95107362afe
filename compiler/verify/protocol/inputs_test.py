"""Valid inputs for the model: smallest valid values, and inputs that run each symbolic loop t trips."""

from compiler.testing.verifier_kernels import ring
from compiler.verify.context import Context
from compiler.verify.protocol import inputs


def test_base_is_the_smallest_valid_input():
    ctx = Context(ring())
    assert ctx.binder.base() == {"N": 64}


def test_scenarios_run_the_loops_t_trips():
    ctx = Context(ring(stages=3))
    loop = ctx.sites("loop")[0].msg
    scenarios = ctx.binder.scenarios(7)
    assert [t for t, _ in scenarios] == list(range(1, 8))
    for t, env in scenarios:
        assert env["N"] == 64 * t
        assert inputs.loop_trips(loop, env) == t
        assert env["block.x"] == 0 and env["grid.x"] == 1


def test_unsatisfiable_contract_has_no_base():
    k = ring()
    k.contract.symbols[0].max = 32  # below its min
    assert Context(k).binder.base() is None
    assert Context(k).binder.scenarios(3) == []

"""The naive KDA forward seed: it verifies, the oracle of its contract judges what it must (on the CPU, through the
binding), and on the GPU the kernel passes that oracle at tail shapes."""

import pytest
import torch

from kernels.kda import binding, reference
from kernels.kda.contract import kda_contract
from kernels.kda.naive import recurrent_naive
from runtime.check import check_kernel

# One token; tails of nothing (T is any length); several heads and a batch.
SHAPES = [{"B": 1, "H": 2, "T": 1}, {"B": 2, "H": 3, "T": 100}, {"B": 1, "H": 1, "T": 257}]
SMALL = [{"B": 1, "H": 2, "T": 1}, {"B": 2, "H": 3, "T": 40}]  # the CPU's (the float64 reference runs token by token)


class Recurrence:
    """Stands in for the compiled kernel on the CPU: writes o and st = S^T as the seed's params say."""

    def __init__(self, decay=True):
        self.decay = decay

    def __call__(self, q, k, v, g, beta, o, st):
        o_ref, s_ref = reference.recurrent(q, k, v, g if self.decay else torch.zeros_like(g), beta)
        o.copy_(o_ref)
        st.copy_(s_ref.transpose(-1, -2))


def test_the_seed_verifies_clean_and_lowers():
    from compiler.lower import lower
    from compiler.verify import has_errors, verify

    kernel = recurrent_naive()
    diagnostics = verify(kernel)
    assert not has_errors(diagnostics), [d.message for d in diagnostics]
    assert "cake_kda_recurrent_naive" in lower(kernel).source


def test_the_oracle_passes_the_recurrence_through_the_binding_and_fails_one_without_decay():
    passed = check_kernel(kda_contract(SMALL), binding.forward(Recurrence(), {}), device="cpu", seed=5)
    assert passed.passed, passed.message
    failed = check_kernel(kda_contract(SMALL[1:]), binding.forward(Recurrence(decay=False), {}), device="cpu", seed=5)
    assert not failed.passed and failed.kind == "wrong_result" and "relative L2 error" in failed.message


def test_inputs_lie_in_the_kernels_domain():
    g = torch.Generator().manual_seed(1)
    contract = kda_contract(SMALL)
    for dist in contract.distributions:
        q, k, v, gate, beta = contract.make_inputs(SMALL[1], dist, g, "cpu")
        assert q.dtype == k.dtype == v.dtype == torch.bfloat16 and gate.dtype == beta.dtype == torch.float32
        assert torch.allclose(k.float().norm(dim=-1), torch.ones(2, 3, 40), atol=1e-2)
        assert (gate <= 0).all() and (gate >= -2).all() and ((beta >= 0) & (beta <= 1)).all()


@pytest.mark.gpu
def test_the_naive_seed_computes_kda_at_tail_shapes():
    from compiler.build import cache as compile_cache
    from compiler.build import driver
    from runtime.compiled import CompiledKernelRunner

    result = driver.build(recurrent_naive(), compile_cache.default_cache())
    assert result.ok, [d.message for d in result.diagnostics]
    checked = check_kernel(kda_contract(SHAPES), binding.forward(CompiledKernelRunner(result.compiled), {}))
    assert checked.passed, checked.message

"""How a compiled KDA forward kernel is launched by the oracle and the timer (worker side), and the peers it is timed beside.

`forward(runner, options)` returns launch(outputs, inputs) for a kernel with the naive seed's params
(kernels/kda/naive.py: q, k, v, g, beta -> o and st, the final state transposed, S^T): it launches the
kernel, then transposes st into final_state [B, H, K, V]. `peers()` gives bench.py's implementations:
CAKE's chunked forward (kernels/kda/api.chunk_kda, the two tuned kernels) and fla-core's chunk_kda,
both called token-first as their users call them.
"""


def forward(runner, options):
    import torch

    def launch(outputs, inputs):
        q, k, v, g, beta = inputs
        o, final_state = outputs
        # A fresh S^T each call (the caching allocator makes it cheap): no state of an earlier call can show through.
        st = torch.empty(final_state.shape, dtype=torch.float32, device=final_state.device)
        runner(q=q, k=k, v=v, g=g, beta=beta, o=o, st=st)
        final_state.copy_(st.transpose(-1, -2))

    return launch


def _token_first(fn):
    def launch(outputs, inputs):
        q, k, v, g, beta = (t.transpose(1, 2).contiguous() for t in inputs)
        o, ht = fn(q=q, k=k, v=v, g=g, beta=beta, output_final_state=True)
        outputs[0].copy_(o.transpose(1, 2))
        outputs[1].copy_(ht)

    return launch


def peers():
    """name -> launch(outputs, inputs): "cake-chunked" and, where fla-core imports, "fla"."""
    from kernels.kda import bench

    names = {"cake": "cake-chunked", "fla": "fla"}
    return {names[name]: _token_first(fn) for name, fn in bench.implementations().items()}

"""Proxy-fence rules: shared memory handed between the generic and the async proxy needs fence.proxy.async.

Threads write and read shared memory through the generic proxy (st.shared,
ld.shared, stmatrix, ldmatrix, cp.async); TMA loads and stores and
wgmma/tcgen05 operand reads go through the async proxy. Both directions need
the threads' fence between their accesses and the synchronization that
orders them before the async access: writes before an async read
(CAKE-DATA-004), and reads before a TMA load that overwrites them
(CAKE-DATA-011, a ring stage released to its producer).
"""

from compiler.verify.protocol import findings

findings.model_rule(
    "CAKE-DATA-004", "data consistency",
    "Generic-proxy shared writes (copy, fill, elementwise, stmatrix, cp.async) read by TMA stores or tensor-core operands are followed by fence(proxy_async) by the writers before the synchronization that orders them.",
    "Have the writing threads run fence(proxy_async) after their writes and before the barrier that hands the tile to the TMA store or MMA.",
    "proxy_fence",
)

findings.model_rule(
    "CAKE-DATA-011", "data consistency",
    "Generic-proxy shared reads (elementwise, copy, reduce operands; ldmatrix) of a stage that a TMA load later refills are followed by fence(proxy_async) by the readers before the release that orders them before the load.",
    "Have the reading threads run fence(proxy_async) after their last generic read of the stage and before the arrive that releases it to the TMA producer.",
    "proxy_fence_war",
)

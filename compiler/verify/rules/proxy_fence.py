"""Proxy-fence rule: generic-proxy shared-memory writes read by the async proxy need fence.proxy.async.

Threads write shared memory through the generic proxy (st.shared, stmatrix,
cp.async); TMA stores and wgmma/tcgen05 operand reads go through the async
proxy. The writing threads must execute fence.proxy.async between their
writes and the synchronization that orders them before the async read.
"""

from compiler.verify.protocol import findings

findings.model_rule(
    "CAKE-DATA-004", "data consistency",
    "Generic-proxy shared writes (copy, fill, elementwise, stmatrix, cp.async) read by TMA stores or tensor-core operands are followed by fence(proxy_async) by the writers before the synchronization that orders them.",
    "Have the writing threads run fence(proxy_async) after their writes and before the barrier that hands the tile to the TMA store or MMA.",
    "proxy_fence",
)

"""Kimi Delta Attention forward: torch oracles, the two CAKE IR kernels and chunk_kda in fla's interface."""

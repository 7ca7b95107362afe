"""Test kernels and contracts for the runtime: the GEMV cheat suite and fake pool tasks."""

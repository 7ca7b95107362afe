"""CAKE's runtime: load, launch, check and time kernels from PyTorch (see README.md)."""

"""The CAKE device header library (include/cake) and its generator."""

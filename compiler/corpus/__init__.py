"""The corpus of known-good CAKE IR programs (the seed schedules of kernels/) and their canonical text."""

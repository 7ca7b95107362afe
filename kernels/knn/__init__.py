"""KNN: exact k nearest neighbours in CAKE IR (score kernels with per-thread top-k lists, a merge kernel),
its PyTorch API, planner, float64 oracle and benchmark."""

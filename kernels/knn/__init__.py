"""KNN: the torch oracle and a CAKE IR schedule (GEMM tiles with a top-k merge epilogue)."""

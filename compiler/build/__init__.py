"""nvcc/ptxas driver, ptxas report parsing and the compile cache."""

"""GEMM: the torch oracle and CAKE IR schedules for sm_80, sm_90a and sm_100a."""

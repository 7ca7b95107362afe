"""Test and benchmark helpers of the compiler: nothing under compiler/ but tests and benchmarks imports them."""

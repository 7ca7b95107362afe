"""Fitness for the evolve loop: GPU measurement in isolated workers, or a fake for tests."""

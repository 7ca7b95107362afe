"""ci/gpu_wheels.txt, the wheels carried to a GPU machine without registries, pins what requirements.txt pins.

The lent H200 installs only what travels with the checkout; a wheel missing from the list surfaces there mid-run
(a measured agent run once stopped at its first ranker fit: no lightgbm). So the list covers the runtime
libraries the GPU steps import that its image lacks, at requirements.txt's versions.
"""

import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Imported by the service, the tests or a measured agent run, and not in the GPU image (torch, triton, numpy,
# scipy are): each must be carried.
NEEDED = ("protobuf", "grpcio", "grpcio-health-checking", "grpcio-reflection", "grpcio-status", "lightgbm")


def pins(name):
    out = {}
    with open(os.path.join(ROOT, name)) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if line:
                package, _, version = line.partition("==")
                out[package.strip().lower()] = version.strip()
    return out


def test_every_needed_wheel_is_listed_and_pinned():
    carried = pins("ci/gpu_wheels.txt")
    assert all(carried.values()), carried
    assert [n for n in NEEDED if n not in carried] == []


def test_versions_are_those_of_requirements():
    required = pins("requirements.txt")
    carried = pins("ci/gpu_wheels.txt")
    assert {n: (v, required[n]) for n, v in carried.items() if n in required and v != required[n]} == {}

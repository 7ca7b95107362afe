"""Bazel's tool for //kernels/kmeans:assign_prebuilt: compiler.build.prebuild over variants.prebuilt_all."""

import sys

from compiler.build import prebuild

if __name__ == "__main__":
    sys.exit(prebuild.main(["kernels.kmeans.variants:prebuilt_all"] + sys.argv[1:]))

"""cake_kernel: a CAKE IR program file compiled to per-SM cubins, PTX and ptxas reports.

    cake_kernel(name = "gemm", program = "//compiler/corpus:good/gemm_sm90a.cake", targets = ["sm_90a"])

For each target, cakec (//compiler/build:cakec) lowers the program to CUDA C++ (with
the launch metadata beside it), rules_cuda's cuda_kernel builds it with the device
header library, and cuda_kernel_tests adds the compile-only ptxas test tagged with
the target, so `bazel test //kernels/... --config=sm_90a` checks that target's builds.
"""

load("@rules_cuda//:defs.bzl", "cuda_kernel", "cuda_kernel_tests")

DEVICE_INCLUDE = "compiler/lower/device/include"

def cake_kernel(name, program, targets, tags = []):
    for sm in targets:
        base = "%s_%s" % (name, sm)
        native.genrule(
            name = base + "_lower",
            srcs = [program],
            outs = [base + ".cu", base + ".launch.pb"],
            tools = ["//compiler/build:cakec"],
            cmd = "$(location //compiler/build:cakec) $(location %s) --target %s -o $(location %s.cu) --metadata $(location %s.launch.pb)" % (
                program,
                sm,
                base,
                base,
            ),
        )
        cuda_kernel(
            name = base,
            src = base + ".cu",
            hdrs = ["//compiler/lower:device_headers"],
            includes = [DEVICE_INCLUDE],
            targets = [sm],
        )
        cuda_kernel_tests(
            name = base + "_compile",
            kernel = ":" + base,
            targets = [sm],
            tags = tags,
        )

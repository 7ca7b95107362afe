"""cuda_kernel: compile one CUDA source per SM target, as Bazel outputs.

For each target in `targets` the rule runs nvcc twice: once to a cubin (machine
code, with ptxas' `-v` resource report kept as `<name>.<sm>.ptxas.txt`) and once
to PTX. A fatbin holding every target's machine code is built beside them.
`cuda_kernel_tests` adds one compile-only test per target, tagged with the
target's name, that re-assembles the PTX with ptxas and checks the cubin's ELF
header names that target; `bazel test //... --config=sm_90a` selects them.
"""

SM_TARGETS = ["sm_80", "sm_90a", "sm_100a"]

def _arch(sm):
    return sm[len("sm_"):]

def _nvcc_common(ctx):
    args = ["-std=c++17", "-O3", "-lineinfo", "--expt-relaxed-constexpr"]
    for d in ctx.attr.defines:
        args.append("-D" + d)
    for inc in ctx.attr.includes:
        args.append("-I" + inc)
    for h in ctx.files.hdrs:
        # Let a header be included by its path relative to the workspace root.
        if h.root.path:
            args.append("-I" + h.root.path)
    return args + ctx.attr.copts

def _run_nvcc(ctx, out, report, args, mnemonic):
    cmd = "'{nvcc}' {args} -o '{out}'".format(
        nvcc = ctx.executable._nvcc.path,
        args = " ".join(["'%s'" % a for a in args]),
        out = out.path,
    )
    if report:
        # ptxas writes its resource report to stderr; keep it as an output and show it on failure.
        cmd = "{cmd} 2> '{report}' || {{ cat '{report}' >&2; exit 1; }}".format(cmd = cmd, report = report.path)
    ctx.actions.run_shell(
        command = cmd,
        inputs = [ctx.file.src] + ctx.files.hdrs,
        outputs = [out] + ([report] if report else []),
        tools = [ctx.executable._nvcc],
        mnemonic = mnemonic,
        use_default_shell_env = True,  # PATH with gcc, which nvcc calls as host compiler
        progress_message = "nvcc %s %s" % (mnemonic, out.short_path),
    )

def _cuda_kernel_impl(ctx):
    common = _nvcc_common(ctx)
    outputs = []
    gencodes = []
    groups = {}
    for sm in ctx.attr.targets:
        arch = _arch(sm)
        cubin = ctx.actions.declare_file("%s.%s.cubin" % (ctx.label.name, sm))
        ptx = ctx.actions.declare_file("%s.%s.ptx" % (ctx.label.name, sm))
        report = ctx.actions.declare_file("%s.%s.ptxas.txt" % (ctx.label.name, sm))
        gencode = "-gencode=arch=compute_%s,code=sm_%s" % (arch, arch)
        gencodes.append(gencode)
        _run_nvcc(ctx, cubin, report, common + ["-cubin", gencode, "-Xptxas=-v", ctx.file.src.path], "CudaCubin")
        _run_nvcc(ctx, ptx, None, common + ["-ptx", "-arch=compute_%s" % arch, ctx.file.src.path], "CudaPtx")
        outputs += [cubin, ptx, report]
        groups[sm] = depset([cubin, ptx, report])
    fatbin = ctx.actions.declare_file("%s.fatbin" % ctx.label.name)
    _run_nvcc(ctx, fatbin, None, common + ["-fatbin"] + gencodes + [ctx.file.src.path], "CudaFatbin")
    outputs.append(fatbin)
    return [
        DefaultInfo(files = depset(outputs), runfiles = ctx.runfiles(files = outputs)),
        OutputGroupInfo(fatbin = depset([fatbin]), **groups),
    ]

cuda_kernel = rule(
    implementation = _cuda_kernel_impl,
    attrs = {
        "src": attr.label(allow_single_file = [".cu"], mandatory = True),
        "hdrs": attr.label_list(allow_files = [".cuh", ".h", ".hpp"]),
        "includes": attr.string_list(doc = "Include directories, relative to the execution root."),
        "defines": attr.string_list(),
        "copts": attr.string_list(),
        "targets": attr.string_list(default = SM_TARGETS),
        "_nvcc": attr.label(default = "@cake_tools//:nvcc", executable = True, cfg = "host"),
    },
)

def cuda_kernel_tests(name, kernel, targets = SM_TARGETS, tags = []):
    """One compile-only test per SM target: ptxas re-assembles the PTX, the cubin names the target."""
    for sm in targets:
        native.filegroup(
            name = "%s_%s_files" % (name, sm),
            srcs = [kernel],
            output_group = sm,
        )
        native.sh_test(
            name = "%s_%s" % (name, sm),
            srcs = ["@rules_cuda//:check_cuda_outputs.sh"],
            args = [sm, "$(locations :%s_%s_files)" % (name, sm), "$(location @cake_tools//:ptxas)"],
            data = [":%s_%s_files" % (name, sm), "@cake_tools//:ptxas"],
            tags = [sm] + tags,
            size = "small",
        )

"""cake_wheel: the `cake-gpu` wheel, built by python/cake_build from the files its deps bring.

    cake_wheel(name = "wheel", deps = [...py_libraries...], data = [...files...], bundles = [...])

Writes <name>/cake_gpu-<version>-py3-none-any.whl (a directory output, since the version
lives in compiler/version.py, not in BUILD files). The action sees exactly the declared
files, laid out as in the checkout, and stages what python/cake_build/layout.py ships.
"""

def _cake_wheel_impl(ctx):
    out = ctx.actions.declare_directory(ctx.attr.name)
    files = depset(
        ctx.files.data + ctx.files.bundles,
        transitive = [d[DefaultInfo].default_runfiles.files for d in ctx.attr.deps],
    )
    args = ctx.actions.args()
    args.add("--root", ".")
    args.add("--out-dir", out.path)
    args.add_all(ctx.files.bundles, before_each = "--bundle")
    ctx.actions.run(
        executable = ctx.executable._tool,
        arguments = [args],
        inputs = files,
        outputs = [out],
        mnemonic = "CakeWheel",
        progress_message = "Building the cake-gpu wheel",
    )
    return [DefaultInfo(files = depset([out]), runfiles = ctx.runfiles(files = [out]))]

cake_wheel = rule(
    implementation = _cake_wheel_impl,
    attrs = {
        "deps": attr.label_list(doc = "py_libraries whose sources (and data) the wheel ships"),
        "data": attr.label_list(allow_files = True, doc = "other files the build reads: the facade, docs, protos"),
        "bundles": attr.label_list(allow_files = [".zip"], doc = "prebuilt kernel stores (compiler/build/prebuild.py)"),
        "_tool": attr.label(default = "//python:build_wheel", executable = True, cfg = "exec"),
    },
)

"""A Python toolchain backed by the repository's pip-made virtual environment.

rules_python's hermetic interpreters cannot be fetched offline, so the toolchain
points at `.venv/bin/python3` (made by ./setup.sh). The rule reads
requirements.txt by label, so editing a pin re-runs this rule; it writes
`pip freeze` into freeze.txt, which every py_test depends on (see
bazel/rules_python/python/defs.bzl): a venv change therefore invalidates the
cached test results instead of leaving stale passes behind.
"""

def _python_venv_impl(rctx):
    rctx.read(rctx.attr.requirements)  # makes requirements.txt an input of this rule
    root = rctx.path(Label("//:WORKSPACE")).dirname
    python = root.get_child(".venv").get_child("bin").get_child("python3")
    if not python.exists:
        fail("CAKE: no virtual environment at %s. Run ./setup.sh first." % python)
    freeze = rctx.execute([str(python), "-m", "pip", "freeze", "--all"])
    if freeze.return_code != 0:
        fail("CAKE: `pip freeze` failed in %s:\n%s" % (python, freeze.stderr))
    rctx.file("freeze.txt", freeze.stdout)
    proto_include = rctx.execute([
        str(python),
        "-c",
        "import grpc_tools, os; print(os.path.join(os.path.dirname(grpc_tools.__file__), '_proto'))",
    ])
    if proto_include.return_code != 0:
        fail("CAKE: grpcio-tools is not installed in %s. Run ./setup.sh." % python)
    rctx.file("protoc.sh", "#!/bin/sh\nexec '%s' -m grpc_tools.protoc -I'%s' \"$@\"\n" % (
        python,
        proto_include.stdout.strip(),
    ), executable = True)
    rctx.file("BUILD.bazel", """
load("@bazel_tools//tools/python:toolchain.bzl", "py_runtime_pair")

package(default_visibility = ["//visibility:public"])

py_runtime(
    name = "py3_runtime",
    interpreter_path = "{python}",
    python_version = "PY3",
    # The launcher stub itself must run under the venv too: there is no `python` on PATH.
    stub_shebang = "#!{python}",
)

py_runtime_pair(
    name = "runtime_pair",
    py3_runtime = ":py3_runtime",
)

toolchain(
    name = "toolchain",
    toolchain = ":runtime_pair",
    toolchain_type = "@bazel_tools//tools/python:toolchain_type",
)

filegroup(
    name = "freeze",
    srcs = ["freeze.txt"],
)

sh_binary(
    name = "protoc",
    srcs = ["protoc.sh"],
)
""".format(python = python))

python_venv = repository_rule(
    implementation = _python_venv_impl,
    attrs = {
        "requirements": attr.label(mandatory = True, allow_single_file = True),
    },
    local = True,
)

"""pytest_test: a py_test whose main runs pytest on its test files.

The repo-root conftest.py (GPU markers, generated-proto import path) comes along
as a dependency, so a test behaves the same under Bazel and under plain pytest.
"""

load("@rules_python//python:defs.bzl", "py_test")

def pytest_test(name, srcs, deps = [], data = [], args = [], **kwargs):
    py_test(
        name = name,
        srcs = srcs + ["//bazel:pytest_main.py"],
        main = "//bazel:pytest_main.py",
        args = ["$(location %s)" % s for s in srcs] + args,
        deps = deps + ["//:conftest"],
        data = data,
        **kwargs
    )

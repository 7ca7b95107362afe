"""rules_python's public macros, forwarded to Bazel 4's native Python rules.

BUILD files load these exactly as they would from the real rules_python, so the
workspace moves to the real ruleset by replacing this repository. One addition:
every test and binary depends on the venv's `pip freeze` (@cake_python//:freeze),
so installing a different package version invalidates cached test results.
"""

_FREEZE = "@cake_python//:freeze"

def py_library(**kwargs):
    native.py_library(**kwargs)

def py_binary(**kwargs):
    kwargs["data"] = kwargs.get("data", []) + [_FREEZE]
    native.py_binary(python_version = "PY3", **kwargs)

def py_test(**kwargs):
    kwargs["data"] = kwargs.get("data", []) + [_FREEZE]
    native.py_test(python_version = "PY3", **kwargs)

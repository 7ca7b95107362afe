"""Forwards rules_cc's public symbols to Bazel 4's native C++ rules.

@bazel_tools//tools/cpp loads cc_library, cc_toolchain and cc_toolchain_suite from
here, so each must exist even though CAKE builds no C++ through Bazel.
"""

def cc_library(**kwargs):
    native.cc_library(**kwargs)

def cc_binary(**kwargs):
    native.cc_binary(**kwargs)

def cc_test(**kwargs):
    native.cc_test(**kwargs)

def cc_toolchain(**kwargs):
    native.cc_toolchain(**kwargs)

def cc_toolchain_suite(**kwargs):
    native.cc_toolchain_suite(**kwargs)

def cc_import(**kwargs):
    native.cc_import(**kwargs)

def objc_library(**kwargs):
    native.objc_library(**kwargs)

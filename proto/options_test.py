"""Every .proto declares its Go and Java stubs consistently with its package (docs/service.md, other languages)."""

import os

import pytest
from cake.compiler.v1 import analysis_pb2, artifact_pb2, compiler_service_pb2, diagnostics_pb2
from cake.ir.v1 import ir_pb2

MODULES = [analysis_pb2, artifact_pb2, compiler_service_pb2, diagnostics_pb2, ir_pb2]


@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.DESCRIPTOR.name)
def test_go_and_java_options_follow_the_package(module):
    fd = module.DESCRIPTOR
    options = fd.GetOptions()
    parts = fd.package.split(".")  # cake.ir.v1
    assert options.go_package == "cake/gen/go/%s;%s" % ("/".join(parts), parts[-2] + parts[-1])
    assert options.java_package == fd.package and options.java_multiple_files
    base = os.path.basename(fd.name)[:-len(".proto")]
    assert options.java_outer_classname == "".join(w.capitalize() for w in base.split("_")) + "Proto"


"""py_proto_grpc: Python protobuf + gRPC code generated at build time from .proto files.

Runs grpc_tools.protoc from the repo's venv (@cake_python//:protoc, which adds the
well-known types' include directory). Outputs sit at the proto's import path
under this package (proto/cake/ir/v1/ir.proto -> cake/ir/v1/ir_pb2.py), and the
py_library puts this package on sys.path, so code imports `cake.ir.v1.ir_pb2`.
Beside each module goes `<name>_descriptor_set.binpb`: the file's
FileDescriptorSet with source info (its comments), which the compiler service reads
at run time (ListPrimitives) without a protobuf compiler. proto/generate.py
writes the same files outside Bazel.
"""

load("@rules_python//python:defs.bzl", "py_library")

DESCRIPTOR_SET_SUFFIX = "_descriptor_set.binpb"

def py_proto_grpc(name, srcs, grpc_srcs = [], deps = [], visibility = None):
    """srcs: .proto files relative to this package; grpc_srcs: those that define services."""
    outs = []
    descriptor_sets = []
    for src in srcs:
        base = src[:-len(".proto")]
        outs += [base + "_pb2.py", base + "_pb2.pyi"]
        descriptor_sets.append(base + DESCRIPTOR_SET_SUFFIX)
        if src in grpc_srcs:
            outs.append(base + "_pb2_grpc.py")
    pkg = native.package_name()
    protoc = "$(location @cake_python//:protoc) -I" + pkg
    cmd = protoc + " --python_out=$(GENDIR)/{0} --pyi_out=$(GENDIR)/{0} $(SRCS)".format(pkg)
    if grpc_srcs:
        cmd += " && {0} --grpc_python_out=$(GENDIR)/{1} {2}".format(
            protoc,
            pkg,
            " ".join(["$(location %s)" % s for s in grpc_srcs]),
        )
    for src, out in zip(srcs, descriptor_sets):
        cmd += " && {0} --include_source_info --descriptor_set_out=$(GENDIR)/{1}/{2} $(location {3})".format(
            protoc,
            pkg,
            out,
            src,
        )
    native.genrule(
        name = name + "_gen",
        srcs = srcs,
        outs = outs + descriptor_sets,
        tools = ["@cake_python//:protoc"],
        cmd = cmd,
    )
    py_library(
        name = name,
        srcs = [o for o in outs if o.endswith(".py")],
        data = [o for o in outs if o.endswith(".pyi")] + descriptor_sets,
        imports = ["."],
        deps = deps,
        visibility = visibility,
    )

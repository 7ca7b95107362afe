"""Generate the Python protobuf/gRPC code for proto/ outside Bazel.

Bazel generates the same code at build time (//proto:cake_py, bazel/proto.bzl). This
script serves plain `pytest` runs and the GPU machine (no Bazel, no protobuf
compiler: its .gen/ is generated here and carried): `python3 proto/generate.py
[OUT_DIR]` writes cake/**/*_pb2.py, *_pb2_grpc.py, *.pyi and each file's
`<name>_descriptor_set.binpb` (its FileDescriptorSet with source info, read by the
compiler service's ListPrimitives) into OUT_DIR (default: .gen/ at the repo root),
and SOURCES.sha256, the digest of the .proto files it was generated from
(`is_current` compares it, so stale generated code is noticed).
"""

import hashlib
import os
import sys

PROTO_ROOT = os.path.dirname(os.path.abspath(__file__))
DESCRIPTOR_SET_SUFFIX = "_descriptor_set.binpb"  # as in bazel/proto.bzl
STAMP = "SOURCES.sha256"


def proto_files():
    """Every .proto under proto/, relative to proto/ (their import paths)."""
    found = []
    for dirpath, _, files in os.walk(PROTO_ROOT):
        for f in files:
            if f.endswith(".proto"):
                found.append(os.path.relpath(os.path.join(dirpath, f), PROTO_ROOT))
    return sorted(found)


def sources_digest():
    """sha256 over the .proto files' paths and contents."""
    h = hashlib.sha256()
    for rel in proto_files():
        with open(os.path.join(PROTO_ROOT, rel), "rb") as f:
            h.update(rel.encode() + b"\0" + f.read() + b"\0")
    return h.hexdigest()


def is_current(out_dir):
    """Whether out_dir holds code generated from the .proto files as they are now."""
    try:
        with open(os.path.join(out_dir, STAMP)) as f:
            return f.read().strip() == sources_digest()
    except OSError:
        return False


def generate(out_dir):
    """Run grpc_tools.protoc on every .proto into out_dir; raise with protoc's message on failure."""
    import grpc_tools
    from grpc_tools import protoc

    os.makedirs(out_dir, exist_ok=True)
    include = os.path.join(os.path.dirname(grpc_tools.__file__), "_proto")
    common = ["protoc", "-I" + PROTO_ROOT, "-I" + include]
    files = proto_files()
    steps = [common + ["--python_out=" + out_dir, "--pyi_out=" + out_dir, "--grpc_python_out=" + out_dir]
             + [os.path.join(PROTO_ROOT, f) for f in files]]
    for f in files:
        descriptor_set = os.path.join(out_dir, f[:-len(".proto")] + DESCRIPTOR_SET_SUFFIX)
        steps.append(common + ["--include_source_info", "--descriptor_set_out=" + descriptor_set,
                               os.path.join(PROTO_ROOT, f)])
    for args in steps:
        if protoc.main(args) != 0:
            raise RuntimeError("protoc failed: %s" % " ".join(args[1:]))
    with open(os.path.join(out_dir, STAMP), "w") as f:
        f.write(sources_digest() + "\n")
    return out_dir


if __name__ == "__main__":
    root = os.path.dirname(PROTO_ROOT)
    print(generate(sys.argv[1] if len(sys.argv) > 1 else os.path.join(root, ".gen")))

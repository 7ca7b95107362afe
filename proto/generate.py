"""Generate the Python protobuf/gRPC code for proto/ outside Bazel.

Bazel generates the same code at build time (//proto:cake_py). This script serves
plain `pytest` runs (the GPU machine has no Bazel): `python3 proto/generate.py
[OUT_DIR]` writes cake/**/*_pb2.py into OUT_DIR (default: .gen/ at the repo root).
"""

import os
import sys

PROTO_ROOT = os.path.dirname(os.path.abspath(__file__))


def proto_files():
    """Every .proto under proto/, relative to proto/ (their import paths)."""
    found = []
    for dirpath, _, files in os.walk(PROTO_ROOT):
        for f in files:
            if f.endswith(".proto"):
                found.append(os.path.relpath(os.path.join(dirpath, f), PROTO_ROOT))
    return sorted(found)


def generate(out_dir):
    """Run grpc_tools.protoc on every .proto into out_dir; raise with protoc's message on failure."""
    import grpc_tools
    from grpc_tools import protoc

    os.makedirs(out_dir, exist_ok=True)
    include = os.path.join(os.path.dirname(grpc_tools.__file__), "_proto")
    args = [
        "protoc",
        "-I" + PROTO_ROOT,
        "-I" + include,
        "--python_out=" + out_dir,
        "--pyi_out=" + out_dir,
        "--grpc_python_out=" + out_dir,
    ] + [os.path.join(PROTO_ROOT, f) for f in proto_files()]
    if protoc.main(args) != 0:
        raise RuntimeError("protoc failed on %s" % " ".join(proto_files()))
    return out_dir


if __name__ == "__main__":
    root = os.path.dirname(PROTO_ROOT)
    print(generate(sys.argv[1] if len(sys.argv) > 1 else os.path.join(root, ".gen")))

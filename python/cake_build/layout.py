"""What the wheel holds and where: the one description both builders (PEP 517 and Bazel) follow.

    monorepo                     wheel (site-packages)
    python/cake/*                cake/            the public namespace (cake.kmeans_assign, ...)
    compiler/, runtime/,         cake/compiler/, cake/runtime/, cake/kernels/   imports rewritten (rewrite.py)
      kernels/
    proto/**.proto (generated)   cake/ir/v1/, cake/compiler/v1/   *_pb2.py, *_pb2_grpc.py, .pyi, descriptor sets
    proto/**.proto, DOCS         cake/proto/, cake/docs/          what the MCP server serves as resources
    prebuilt stores (*.zip)      cake/prebuilt/<target>/<hash>.pb  prebuilt cubins: compiler/build/prebuilt.py's
                                                                   `prebuilt/` store, beside the packages

Left out: tests, test helpers (testing/, testdata/), benchmarks, BUILD files and
READMEs. The agent is not part of the package.
"""

import os

DIST_NAME = "cake-gpu"  # "cake" on PyPI is another, older project; the import name is `cake`
PACKAGES = ("compiler", "runtime", "kernels")
DATA_SUFFIXES = (".py", ".json", ".cake", ".cuh", ".pyi", ".typed")
DOCS = ("docs/ir.md", "docs/ir_text.md", "docs/verifier_rules.md", "docs/cli.md", "docs/mcp.md", "docs/package.md")
FACADE = "python/cake"
BUNDLE_DIR = "cake/prebuilt"
# Functions yielding every kernel a public op can run (what the wheel ships compiled).
PREBUILT = ("kernels.kmeans.variants:prebuilt_all",)
SKIPPED_DIRS = {"testing", "testdata", "__pycache__"}
SKIPPED_FILES = {"BUILD.bazel", "README.md", "bench.py", "conftest.py"}

DEPENDENCIES = (
    "torch>=2.4",
    "numpy>=1.26",
    "protobuf>=7.35.1,<8",  # the generated code's runtime (grpcio-tools 1.85's protoc)
    "cuda-bindings>=12.6",  # runtime/loader.py: cuda.bindings.driver
)
EXTRAS = {
    "service": ("grpcio>=1.85", "grpcio-health-checking>=1.85", "grpcio-reflection>=1.85", "grpcio-status>=1.85"),
    "mcp": ("mcp>=2.3",),
}
SCRIPTS = {
    "cake": "cake.compiler.cli.main:main",
    "cake-mcp": "cake.compiler.mcp.main:main",
    "cake-server": "cake.compiler.service.main:main",
}


def shipped(relpath):
    """Whether the monorepo file at `relpath` (from the repo root, '/'-separated) goes into cake/."""
    parts = relpath.split("/")
    if parts[0] not in PACKAGES or SKIPPED_DIRS.intersection(parts[:-1]):
        return False
    name = parts[-1]
    return name not in SKIPPED_FILES and not name.endswith("_test.py") and name.endswith(DATA_SUFFIXES)


def package_files(root):
    """Every shipped file under `root`'s packages, as sorted relative paths."""
    out = []
    for package in PACKAGES:
        for dirpath, dirnames, files in os.walk(os.path.join(root, package), followlinks=True):
            dirnames[:] = sorted(d for d in dirnames if d not in SKIPPED_DIRS)
            for f in files:
                rel = os.path.relpath(os.path.join(dirpath, f), root).replace(os.sep, "/")
                if shipped(rel):
                    out.append(rel)
    return sorted(out)


def version(root):
    """compiler/version.py's VERSION, read without importing the compiler."""
    import ast

    with open(os.path.join(root, "compiler", "version.py")) as f:
        tree = ast.parse(f.read())
    for node in tree.body:
        if isinstance(node, ast.Assign) and [t.id for t in node.targets if isinstance(t, ast.Name)] == ["VERSION"]:
            return node.value.value
    raise ValueError("compiler/version.py defines no VERSION")

"""Host tools the build calls: nvcc and ptxas (CUDA 13) and buf (npm @bufbuild/buf).

Each is wrapped in a script rather than symlinked: nvcc run through a symlink
cannot find cuda_runtime.h. A tool that is missing becomes a wrapper that fails with
a message saying what to install, so only its users break. nvcc's wrapper gives each
run a temporary directory of its own: nvcc names its temporaries by the input file
and its process id, every sandboxed action is process 2 of its own PID namespace,
and /tmp is shared, so two builds compiling one file at once (two checkouts' Bazel
servers, say) removed each other's files ("ptxas fatal: Input file ... could not be
opened").
"""

_MISSING = """#!/bin/sh
echo "CAKE: {tool} not found. {hint}" >&2
exit 1
"""

_PRIVATE_TMP = """#!/bin/sh
d=$(mktemp -d "${{TMPDIR:-/tmp}}/cake-{tool}.XXXXXX") || exit 1
trap 'rm -rf "$d"' EXIT
TMPDIR="$d" '{path}' "$@"
"""

def _wrap(rctx, name, found, hint, private_tmp = False):
    if found and private_tmp:
        rctx.file(name + ".sh", _PRIVATE_TMP.format(tool = name, path = found), executable = True)
    elif found:
        rctx.file(name + ".sh", "#!/bin/sh\nexec '%s' \"$@\"\n" % found, executable = True)
    else:
        rctx.file(name + ".sh", _MISSING.format(tool = name, hint = hint), executable = True)

def _first_existing(rctx, candidates):
    for c in candidates:
        if c and rctx.path(c).exists:
            return str(rctx.path(c))
    return None

def _local_tools_impl(rctx):
    root = rctx.path(Label("//:WORKSPACE")).dirname
    cuda_home = rctx.os.environ.get("CUDA_HOME", "/usr/local/cuda")
    cuda_hint = "Install the CUDA 13 toolkit (nvcc) under /usr/local/cuda or set CUDA_HOME."
    _wrap(rctx, "nvcc", _first_existing(rctx, [cuda_home + "/bin/nvcc", "/usr/local/cuda/bin/nvcc"]), cuda_hint,
          private_tmp = True)
    _wrap(rctx, "ptxas", _first_existing(rctx, [cuda_home + "/bin/ptxas", "/usr/local/cuda/bin/ptxas"]), cuda_hint)
    _wrap(
        rctx,
        "buf",
        _first_existing(rctx, [
            # The native binary first: the .bin/buf shim needs node on the action PATH.
            str(root) + "/.tools/node_modules/@bufbuild/buf-linux-x64/bin/buf",
            str(root) + "/.tools/node_modules/@bufbuild/buf-linux-aarch64/bin/buf",
            str(root) + "/.tools/node_modules/.bin/buf",
        ]),
        "Run ./setup.sh (it installs npm @bufbuild/buf into .tools/).",
    )
    rctx.file("BUILD.bazel", """
package(default_visibility = ["//visibility:public"])

sh_binary(name = "nvcc", srcs = ["nvcc.sh"])

sh_binary(name = "ptxas", srcs = ["ptxas.sh"])

sh_binary(name = "buf", srcs = ["buf.sh"])
""")

local_tools = repository_rule(
    implementation = _local_tools_impl,
    environ = ["CUDA_HOME"],
    local = True,
)

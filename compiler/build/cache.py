"""The compile cache: CompiledKernel artifacts keyed by (IR hash, target, toolchain).

Entries are files under one directory (default ~/.cache/cake/compile, or $CAKE_CACHE_DIR),
so the cache survives restarts. Writers publish with write-to-temp + os.replace, which is
atomic on POSIX: concurrent writers of one key leave one whole entry, and readers never
see a partial file. A corrupt or unreadable entry counts as a miss.
"""

import hashlib
import os
import tempfile

from cake.compiler.v1 import artifact_pb2


def key(ir_digest, target, toolchain):
    """The cache key of one build."""
    return hashlib.sha256(("%s|%s|%s" % (ir_digest, target, toolchain)).encode()).hexdigest()


class CompileCache:
    def __init__(self, directory):
        self.directory = directory

    def _path(self, k):
        return os.path.join(self.directory, k[:2], k + ".pb")

    def get(self, k):
        try:
            with open(self._path(k), "rb") as f:
                data = f.read()
        except OSError:
            return None
        out = artifact_pb2.CompiledKernel()
        try:
            out.ParseFromString(data)
        except Exception:  # noqa: BLE001  (a corrupt entry is a miss, never an error)
            return None
        return out

    def put(self, k, compiled):
        path = self._path(k)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".tmp-")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(compiled.SerializeToString(deterministic=True))
            os.replace(tmp, path)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise


def default_cache():
    directory = os.environ.get("CAKE_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "cake", "compile")
    return CompileCache(directory)

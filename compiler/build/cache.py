"""The compile cache: CompiledKernel artifacts keyed by (IR hash, target, toolchain).

Entries are files under one directory (by default `compile/` in compiler/locations.py's
cache root: $CAKE_CACHE_DIR, $XDG_CACHE_HOME/cake or ~/.cache/cake; TEST_TMPDIR under
`bazel test`), so the cache survives restarts. Writers publish with write-to-temp +
os.replace, which is atomic on POSIX: concurrent writers of one key leave one whole
entry, and readers never see a partial file. A directory that cannot be written is
never an error for a build: the kernel is compiled in its temporary directory as
always, is simply not kept, and the first such failure per directory warns once
(CacheNotWritable).

An entry is MAGIC, the sha256 of the payload, then the payload (a serialized
CompiledKernel). A reader checks all three: an entry that is empty, truncated, altered,
of another format or unreadable counts as a miss, so the next build rewrites it.
"""

import hashlib
import os
import tempfile
import warnings

from cake.compiler.v1 import artifact_pb2

from compiler import locations

# Directories already warned about in this process: one warning each, not one per build.
_warned = set()


class CacheNotWritable(RuntimeWarning):
    """The compile cache's directory cannot be written: builds go on, uncached."""


# The entry format's tag; a new format gets a new tag, and entries of the old one are misses.
MAGIC = b"CAKE-CACHE-1\n"
_DIGEST_BYTES = hashlib.sha256().digest_size


def encode_entry(compiled):
    """The bytes of a cache entry holding `compiled`."""
    payload = compiled.SerializeToString(deterministic=True)
    return MAGIC + hashlib.sha256(payload).digest() + payload


def decode_entry(data):
    """The CompiledKernel an entry holds, or None when the bytes are not a whole, intact entry."""
    head = len(MAGIC) + _DIGEST_BYTES
    if len(data) < head or not data.startswith(MAGIC):
        return None
    digest, payload = data[len(MAGIC):head], data[head:]
    if hashlib.sha256(payload).digest() != digest:
        return None
    out = artifact_pb2.CompiledKernel()
    try:
        out.ParseFromString(payload)
    except Exception:  # noqa: BLE001  (an entry we did not write is a miss, never an error)
        return None
    return out


def key(ir_digest, target, toolchain, source):
    """The cache key of one build: the IR, the target, the toolchain and the CUDA source lowering made of them
    (so a fix in lowering never answers with a cubin built from the code before it)."""
    text = "%s|%s|%s|%s" % (ir_digest, target, toolchain, hashlib.sha256(source.encode()).hexdigest())
    return hashlib.sha256(text.encode()).hexdigest()


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
        return decode_entry(data)

    def put(self, k, compiled):
        """Publish `compiled` under key `k`; False (after one warning) when the directory cannot be written."""
        path = self._path(k)
        tmp = None
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".tmp-")
            with os.fdopen(fd, "wb") as f:
                f.write(encode_entry(compiled))
            os.replace(tmp, path)
        except OSError as e:
            self._warn_unwritable(e)
            return False
        finally:
            if tmp is not None and os.path.exists(tmp):
                os.unlink(tmp)
        return True

    def _warn_unwritable(self, error):
        if self.directory in _warned:
            return
        _warned.add(self.directory)
        warnings.warn(CacheNotWritable(
            "compile cache %s cannot be written (%s): compiling without a cache; set CAKE_CACHE_DIR to a writable "
            "directory to keep compiled kernels" % (self.directory, error.strerror or error)), stacklevel=3)


def default_directory():
    """The compile cache's directory on this machine (compiler/locations.py's cache root, `compile/`)."""
    return os.path.join(locations.cache_dir(), "compile")


def default_cache():
    return CompileCache(default_directory())

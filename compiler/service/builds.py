"""Where the service runs nvcc, and what a killed server leaves behind there.

Every server process builds under one root (BuildRoot.default(): cake-builds-<uid> in
the system's temporary directory): in its own directory `<root>/<pid>-<random>/`, whose
`lock` file it holds locked (flock) for as long as it lives, with one subdirectory per
nvcc run. nvcc runs in its own process group and its working directory is its build
directory, so a server killed with SIGKILL leaves both behind: the directory and the
nvcc processes still running in it. The lock dies with its holder; at start a server
takes every directory whose lock is free, kills the processes working inside it (found
by their working directory in /proc) and removes it.
"""

import contextlib
import fcntl
import logging
import os
import shutil
import signal
import tempfile
import time

log = logging.getLogger("cake.service")

_LOCK = "lock"
_NEW = ".new-"
# A directory still under its new name this long after it was made belongs to a server that died starting.
_STARTING_SECONDS = 60.0
# Rounds of killing what works in a dead server's directory (a dying nvcc may still start a child).
_KILL_ROUNDS = 5


class BuildRoot:
    def __init__(self, root):
        self.root = root
        self.directory = None
        self._lock_fd = None

    @classmethod
    def default(cls):
        return cls(os.path.join(tempfile.gettempdir(), "cake-builds-%d" % os.getuid()))

    def open(self):
        """Clean up after dead servers, then take this server's directory; what was reaped."""
        os.makedirs(self.root, mode=0o700, exist_ok=True)
        reaped = reap(self.root)
        # Made under a name reap() leaves alone, and renamed once locked: no one can see it unlocked.
        fresh = tempfile.mkdtemp(prefix=_NEW, dir=self.root)
        self._lock_fd = os.open(os.path.join(fresh, _LOCK), os.O_CREAT | os.O_RDWR, 0o600)
        fcntl.flock(self._lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        self.directory = os.path.join(self.root, "%d-%s" % (os.getpid(), os.path.basename(fresh)[len(_NEW):]))
        os.rename(fresh, self.directory)
        return reaped

    @contextlib.contextmanager
    def build_directory(self):
        """A fresh directory for one nvcc run, removed after it."""
        path = tempfile.mkdtemp(prefix="build-", dir=self.directory)
        try:
            yield path
        finally:
            shutil.rmtree(path, ignore_errors=True)

    def close(self):
        if self.directory is not None:
            shutil.rmtree(self.directory, ignore_errors=True)
            os.close(self._lock_fd)
            self.directory = self._lock_fd = None


def reap(root):
    """Remove the directories of dead servers under `root`, first killing what still works in them.

    Returns {"directories": n, "processes": n}."""
    reaped = {"directories": 0, "processes": 0}
    for name in sorted(os.listdir(root)):
        path = os.path.join(root, name)
        if not os.path.isdir(path) or (name.startswith(_NEW) and not _older_than(path, _STARTING_SECONDS)):
            continue
        if not _owner_is_dead(path):
            continue
        reaped["processes"] += _kill_processes_in(path)
        shutil.rmtree(path, ignore_errors=True)
        reaped["directories"] += 1
    if any(reaped.values()):
        log.warning("cleaned up after a server that did not stop", extra={"fields": dict(event="reaped", **reaped)})
    return reaped


def _owner_is_dead(path):
    """True when no live process holds the directory's lock (or it has none: its owner died starting)."""
    try:
        fd = os.open(os.path.join(path, _LOCK), os.O_RDWR)
    except FileNotFoundError:
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    finally:
        os.close(fd)
    return True


def _older_than(path, seconds):
    try:
        return time.time() - os.stat(path).st_mtime > seconds
    except FileNotFoundError:
        return False


def _kill_processes_in(path):
    """SIGKILL every process of this user whose working directory is `path` or below; how many."""
    prefix = os.path.realpath(path) + os.sep
    killed = set()
    for _ in range(_KILL_ROUNDS):
        found = [pid for pid in _pids() if pid not in killed and _cwd(pid).startswith(prefix)]
        if not found:
            break
        for pid in found:
            try:
                os.kill(pid, signal.SIGKILL)
                killed.add(pid)
            except (ProcessLookupError, PermissionError):
                pass
        time.sleep(0.05)
    return len(killed)


def _pids():
    return [int(p) for p in os.listdir("/proc") if p.isdigit()]


def _cwd(pid):
    try:
        return os.readlink("/proc/%d/cwd" % pid) + os.sep
    except OSError:  # gone, or another user's
        return ""

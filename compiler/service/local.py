"""A real server process on this machine, for tests, the agent and scripts.

    with LocalServer(port=0, compile_workers=1) as server:
        server.port, server.process, server.log_path
        server.stop()    # SIGTERM, then the exit code

Runs `python -m compiler.service.main` with this interpreter and this process'
import path, reads the bound port from its first stdout line, and keeps its
stderr (JSON log lines) in a file. The server stops when this process dies
(--parent-pid, so an agent killed with SIGKILL leaves no server running).
Keyword flags become command-line flags:
compile_workers=1 -> --compile-workers 1, insecure_allow_remote=True -> the bare
flag; None and False are left out.
"""

import json
import os
import subprocess
import sys
import tempfile
import threading

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def flag_args(flags):
    out = []
    for key, value in flags.items():
        flag = "--" + key.replace("_", "-")
        if value is True:
            out.append(flag)
        elif value is not None and value is not False:
            out += [flag, str(value)]
    return out


class LocalServer:
    def __init__(self, port=0, env=None, startup_timeout=60.0, **flags):
        main = __name__.rpartition(".")[0] + ".main"  # compiler.service.main (cake.compiler.service.main installed)
        flags.setdefault("parent_pid", os.getpid())  # a killed owner leaves no server behind
        self.argv = [sys.executable, "-m", main, "--port", str(port)] + flag_args(flags)
        self.env = dict(os.environ, **(env or {}))
        self.env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
        self.startup_timeout = startup_timeout
        self.process = None
        self.port = None
        self.log_path = None

    def start(self):
        fd, self.log_path = tempfile.mkstemp(prefix="cake-server-", suffix=".log")
        with os.fdopen(fd, "wb") as log:
            self.process = subprocess.Popen(
                self.argv, cwd=ROOT, env=self.env, stdout=subprocess.PIPE, stderr=log, stdin=subprocess.DEVNULL
            )
        line = self._first_line()
        if not line.strip().isdigit():
            self.process.kill()
            self.process.wait()
            self.process.stdout.close()
            log = self.log()
            os.unlink(self.log_path)
            raise RuntimeError("the compiler server did not start (%s):\n%s" % (" ".join(self.argv), log[-4000:]))
        self.port = int(line)
        return self

    def _first_line(self):
        got = []
        reader = threading.Thread(target=lambda: got.append(self.process.stdout.readline()), daemon=True)
        reader.start()
        reader.join(self.startup_timeout)
        return got[0].decode() if got else ""

    @property
    def address(self):
        return "127.0.0.1:%d" % self.port

    def log(self):
        """The server's stderr so far."""
        with open(self.log_path, encoding="utf-8", errors="replace") as f:
            return f.read()

    def events(self, event):
        """The server's structured log records (its JSON lines) of `event` so far."""
        records = (json.loads(line) for line in self.log().splitlines() if line.startswith("{"))
        return [r for r in records if r.get("event") == event]

    def stop(self, timeout=60.0):
        """SIGTERM the server and wait for it (kill it after `timeout` seconds); its exit code."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process.stdout.close()
        return self.process.returncode

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
        os.unlink(self.log_path)

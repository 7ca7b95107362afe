"""Test helpers: a new virtual environment that sees this machine's torch but none of the checkout.

    venv = CleanVenv(tmp_path / "venv")           # python -m venv, offline
    venv.install(wheel)                           # pip --no-index: the wheel's declared deps must be met here
    venv.run("-c", "import cake")                 # no PYTHONPATH, cwd outside the checkout

Dependencies come from the interpreter running the tests (its site-packages, linked
by a .pth file after the venv's own), so nothing is downloaded; the checkout, .gen/ and
PYTHONPATH never reach the venv.
"""

import os
import subprocess
import sys
import sysconfig


def store_kernels():
    """The one kernel of the test wheel's prebuilt store: the KMeans update for D <= 32, bf16 (a short nvcc build)."""
    from kernels.kmeans import tuned

    return [tuned.update_sorted(d=32, dtype="bf16")]


class CleanVenv:
    def __init__(self, path, base_python=sys.executable):
        self.path = str(path)
        subprocess.run([base_python, "-m", "venv", "--without-pip", self.path], check=True)
        self.python = os.path.join(self.path, "bin", "python")
        site = subprocess.run([self.python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                              check=True, capture_output=True, text=True).stdout.strip()
        self.site = site
        shared = sysconfig.get_paths()["purelib"]
        with open(os.path.join(site, "zz_shared_dependencies.pth"), "w") as f:
            f.write(shared + "\n")
        self.cwd = os.path.dirname(self.path)

    def env(self, **extra):
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP")}
        env.update(extra)
        return env

    def install(self, wheel, *flags):
        """pip install `wheel` (offline, dependencies resolved against what the venv sees)."""
        return subprocess.run([sys.executable, "-m", "pip", "--python", self.python, "install", "--no-index",
                               "--no-cache-dir", "--disable-pip-version-check", "-q", *flags, str(wheel)],
                              check=True, capture_output=True, text=True, env=self.env())

    def run(self, *args, env=None, timeout=300):
        return subprocess.run([self.python, *args], capture_output=True, text=True, cwd=self.cwd,
                              env=self.env(**(env or {})), timeout=timeout)

    def command(self, name, *args, env=None, timeout=300):
        """Run one of the venv's console scripts."""
        return subprocess.run([os.path.join(self.path, "bin", name), *args], capture_output=True, text=True,
                              cwd=self.cwd, env=self.env(**(env or {})), timeout=timeout)

"""The host a CPU figure was taken on: the record every CPU benchmark writes, and its scheduling priority.

`record(*packages)` gives the CPU model, cores, Python, the platform, the commit measured
($CAKE_COMMIT, else the checkout's HEAD), the UTC date, the load average and the scheduling autogroup, plus the versions
of the packages named (None for one that is not installed). Other work on a shared
machine inflates CPU figures; the load says how busy it was, the autogroup how the run
ranked against it: with autogroups (Linux's default) `nice` ranks a process only inside
its session, and the group's own niceness ranks the session against the others.
`raise_priority()` sets this session's group to nice -20 where it may (root).
The compiler's benchmarks and the agent's share this one record.
"""

import datetime
import importlib.metadata
import os
import platform
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
AUTOGROUP = "/proc/self/autogroup"


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def commit(root=ROOT):
    """The commit measured: $CAKE_COMMIT when set (a copy of the tree may sit inside another checkout, whose
    HEAD git would report), else the HEAD of the checkout at `root`, else None."""
    if os.environ.get("CAKE_COMMIT"):
        return os.environ["CAKE_COMMIT"]
    try:
        out = subprocess.run(["git", "-C", root, "rev-parse", "HEAD"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


def autogroup():
    """This process' scheduler autogroup and its niceness ("/autogroup-12 nice -20"); None without autogroups."""
    try:
        with open(AUTOGROUP) as f:
            return f.read().strip()
    except OSError:
        return None


def raise_priority():
    """Set this session's autogroup to nice -20 (its children inherit it); the autogroup after, or why not."""
    try:
        with open(AUTOGROUP, "w") as f:
            f.write("-20")
    except OSError as e:
        return "unchanged (%s)" % e
    return autogroup()


def package_version(name):
    """The installed version of distribution `name` (as pip names it: "grpcio", "flash-kmeans"), or None."""
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def record(*packages):
    """The host record, with the version of each of `packages` (distribution names) as a field of its own."""
    out = {
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cake_commit": commit(),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "nice": os.nice(0),
        "autogroup": autogroup(),
    }
    out.update({p: package_version(p) for p in packages})
    return out

"""Where CAKE keeps its files on this machine: the cache and the state directories.

The one home of these rules (XDG Base Directory conventions); everything that
writes outside the checkout asks here:

- cache (rebuildable: compiled kernels): $CAKE_CACHE_DIR, else $XDG_CACHE_HOME/cake,
  else ~/.cache/cake;
- state (worth keeping: the agent's runs and what it learned): $CAKE_STATE_DIR,
  else $XDG_STATE_HOME/cake, else ~/.local/state/cake.

Under `bazel test` (TEST_TMPDIR is set) both default to folders under the test's
own TEST_TMPDIR: the sandbox mounts HOME read-only, and a test must never depend on
what an earlier run left in the user's cache. An explicit CAKE_* variable still wins.
"""

import os


def _under(variable, xdg, fallback, name):
    explicit = os.environ.get(variable)
    if explicit:
        return os.path.abspath(os.path.expanduser(explicit))
    test_tmp = os.environ.get("TEST_TMPDIR")
    if test_tmp:
        return os.path.join(test_tmp, "cake-" + name)
    base = os.environ.get(xdg)
    if base and os.path.isabs(base):  # the XDG spec: a relative value is invalid and ignored
        return os.path.join(base, "cake")
    return os.path.join(os.path.expanduser("~"), *fallback, "cake")


def cache_dir():
    """CAKE's cache root (the compile cache lives in its `compile/`)."""
    return _under("CAKE_CACHE_DIR", "XDG_CACHE_HOME", (".cache",), "cache")


def state_dir():
    """CAKE's state root (the agent's runs and learned knowledge live in its `agent/`)."""
    return _under("CAKE_STATE_DIR", "XDG_STATE_HOME", (".local", "state"), "state")

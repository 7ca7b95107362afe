"""Where the agent reads and writes: the checkout, the runs root, the learned store, earlier runs.

- the checkout: where `bazel run` was invoked ($BUILD_WORKSPACE_DIRECTORY), else this
  file's repository. Runs never write into it.
- the runs root: `--runs-root`, else $CAKE_RUNS_ROOT, else the parent of `--run-dir`
  when one is given, else agent/runs under CAKE's state directory
  (compiler/locations.py: $CAKE_STATE_DIR, $XDG_STATE_HOME/cake, ~/.local/state/cake).
  Each run is a directory under it; the learned store is its `knowledge/`.
- the knowledge base: `--knowledge-dir`, else the checkout's agent/knowledge.
- earlier runs: before the runs root existed, runs lived in <checkout>/.cake/agent/runs.
  They stay where they are and are still found: the outer loop reads them too.
"""

import dataclasses
import os

from compiler import locations

from agent.learn import knowledge
from agent.store import FILE as STORE_FILE

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RUNS_ROOT_VARIABLE = "CAKE_RUNS_ROOT"


class PlaceError(ValueError):
    """A location given on the command line or in the environment cannot be used."""


def checkout():
    """The checkout: where `bazel run` was invoked, else this file's repository."""
    return os.environ.get("BUILD_WORKSPACE_DIRECTORY") or REPO


def legacy_runs_root(repo=None):
    """Where runs lived before the runs root: <checkout>/.cake/agent/runs."""
    return os.path.join(repo or checkout(), ".cake", "agent", "runs")


@dataclasses.dataclass(frozen=True)
class Places:
    runs_root: str
    knowledge_base: str
    legacy_root: str  # earlier runs (read, never written)

    @property
    def learned(self):
        """The learned store: knowledge/ under the runs root."""
        return os.path.join(self.runs_root, "knowledge")

    def knowledge(self):
        return knowledge.Knowledge(self.knowledge_base, self.learned)

    def roots(self, run_dir=None):
        """Every directory whose runs the outer loop reads: the runs root, the folder of `run_dir` (the run
        just made, wherever it lies), and the old location when it holds runs."""
        out = [self.runs_root]
        extra = [os.path.dirname(os.path.abspath(run_dir))] if run_dir else []
        if self.legacy_runs():
            extra.append(self.legacy_root)
        for d in extra:
            if all(os.path.realpath(d) != os.path.realpath(o) for o in out):
                out.append(d)
        return out

    def legacy_runs(self):
        """Run directories at the old location."""
        if not os.path.isdir(self.legacy_root):
            return []
        return sorted(d for d in os.listdir(self.legacy_root)
                      if os.path.exists(os.path.join(self.legacy_root, d, STORE_FILE)))


def resolve(runs_root=None, knowledge_dir=None, run_dir=None, environ=None):
    """Places from the flags (None: not given); PlaceError when one cannot be used."""
    env = os.environ if environ is None else environ
    if knowledge_dir is not None and not os.path.isdir(knowledge_dir):
        raise PlaceError("--knowledge-dir %s: no such directory (it holds tactics.json, repairs.json, rules.json;"
                         " leave it out to use the checkout's agent/knowledge)" % knowledge_dir)
    base = os.path.abspath(knowledge_dir or knowledge.default_dir())
    if not os.path.exists(os.path.join(base, knowledge.TACTICS)):
        raise PlaceError("%s has no %s: not a knowledge directory" % (base, knowledge.TACTICS))
    if runs_root:
        root = runs_root
    elif env.get(RUNS_ROOT_VARIABLE):
        root = env[RUNS_ROOT_VARIABLE]
    elif run_dir:
        root = os.path.dirname(os.path.abspath(run_dir))
    else:
        root = os.path.join(locations.state_dir(), "agent", "runs")
    root = os.path.abspath(os.path.expanduser(root))
    if os.path.exists(root) and not os.path.isdir(root):
        raise PlaceError("runs root %s is not a directory" % root)
    return Places(root, base, legacy_runs_root())

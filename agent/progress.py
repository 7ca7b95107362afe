"""The progress display: best so far, evaluations per minute, failures by class.

On a terminal it is a rich live panel redrawn as candidates finish; otherwise (logs,
CI, pipes) a plain line every few seconds. Both read the loop's snapshot dicts, which
the loop builds only when `due()` says one would be shown: a snapshot reads the whole
store, and building one per candidate is what first held the driver back at scale
(agent/executors/simulate.py).
"""

import sys
import time

PLAIN_EVERY_S = 5.0
REFRESH_PER_S = 4


def _us(seconds):
    return "-" if seconds is None else ("%.2f us" % (seconds * 1e6) if seconds < 1e-2 else "%.3f s" % seconds)


def summary(s):
    """The snapshot's headline facts as (label, value) pairs."""
    rate = s["evaluations"] / max(s["elapsed_s"], 1e-9) * 60.0
    speedup = "-" if not (s["best_s"] and s["seed_s"]) else "%.3fx" % (s["seed_s"] / s["best_s"])
    what = "measured" if s["mode"] == "measure" else "predicted"
    rows = [
        ("best so far (%s)" % what, "%s  (candidate #%s, %s vs seed)" % (_us(s["best_s"]), s["best_id"], speedup)),
        ("evaluations", "%d of %d candidates, %.1f per minute" % (s["evaluations"], s["candidates"], rate)),
        ("generation", "%d, %.0f s elapsed" % (s["generation"], s["elapsed_s"])),
    ]
    if s["mode"] == "measure":
        rows.append(("device time", "%.1f s" % s["device_s"]))
    return rows


def failures_text(failures, limit=6):
    if not failures:
        return "none"
    items = list(failures.items())
    text = ", ".join("%s %d" % kv for kv in items[:limit])
    return text + (", ..." if len(items) > limit else "")


class PlainProgress:
    def __init__(self, out=None, every_s=PLAIN_EVERY_S):
        self.out = out or sys.stdout
        self.every_s = every_s
        self._last = 0.0
        self._snapshot = None
        self._closed = False

    def message(self, text):
        print(text, file=self.out, flush=True)

    def due(self):
        """Whether a new snapshot would be shown now (the loop skips building ones nobody would see)."""
        return time.monotonic() - self._last >= self.every_s

    def update(self, snapshot):
        self._snapshot = snapshot
        now = time.monotonic()
        if now - self._last >= self.every_s:
            self._last = now
            self._line(snapshot)

    def _line(self, s):
        facts = "; ".join("%s: %s" % kv for kv in summary(s))
        self.message("[agent] %s; failures: %s" % (facts, failures_text(s["failures"])))

    def close(self):
        if self._snapshot is not None and not self._closed:
            self._line(self._snapshot)
        self._closed = True


class RichProgress:
    def __init__(self, title):
        from rich.console import Console
        from rich.live import Live

        self.console = Console()
        self.title = title
        self.live = Live(console=self.console, refresh_per_second=REFRESH_PER_S, transient=False)
        self.live.start()
        self._last = 0.0

    def due(self):
        now = time.monotonic()
        if now - self._last < 1.0 / REFRESH_PER_S:
            return False
        self._last = now
        return True

    def message(self, text):
        self.live.console.print(text)

    def update(self, snapshot):
        from rich.panel import Panel
        from rich.table import Table

        table = Table.grid(padding=(0, 2))
        table.add_column(style="bold")
        table.add_column()
        for label, value in summary(snapshot):
            table.add_row(label, value)
        table.add_row("failures by class", failures_text(snapshot["failures"], limit=10))
        if snapshot.get("last"):
            table.add_row("last", snapshot["last"])
        self.live.update(Panel(table, title=self.title))

    def close(self):
        self.live.stop()  # idempotent


def make(title, plain=None):
    """A rich display on a terminal, plain lines otherwise (or when `plain`)."""
    if plain is None:
        plain = not sys.stdout.isatty()
    return PlainProgress() if plain else RichProgress(title)

"""The op printer table: op kind -> function(emitter, op message, IR path).

Families live in ops_control.py, ops_sync.py, ops_movement.py, ops_matrix.py and
ops_math.py; each registers its printers with @printer("kind").
"""

PRINTERS = {}


def printer(kind):
    def register(fn):
        if kind in PRINTERS:
            raise ValueError("two printers for op %r" % kind)
        PRINTERS[kind] = fn
        return fn

    return register


def _load_families():
    # Imported for their registrations.
    from compiler.lower import ops_control, ops_math, ops_matrix, ops_movement, ops_sync  # noqa: F401


_load_families()

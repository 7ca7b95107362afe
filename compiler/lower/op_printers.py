"""The op printer registry: op kind -> function(emitter, op message, IR path).

Each family (ops_control.py, ops_sync.py, ops_movement.py, ops_matrix.py,
ops_math.py) registers its printers with @printer("kind"); ops.py imports the
families and is the table the emitter reads. This module imports nothing, so the
families and the table depend on it without a circle.
"""

PRINTERS = {}


def printer(kind):
    def register(fn):
        if kind in PRINTERS:
            raise ValueError("two printers for op %r" % kind)
        PRINTERS[kind] = fn
        return fn

    return register

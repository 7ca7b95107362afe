"""The op printer table: op kind -> function(emitter, op message, IR path), every family's printers.

Families live in ops_control.py, ops_sync.py, ops_movement.py, ops_matrix.py and
ops_math.py; each registers its printers in op_printers.py with @printer("kind").
"""

from compiler.lower import ops_control, ops_math, ops_matrix, ops_movement, ops_sync  # noqa: F401  (registrations)
from compiler.lower.op_printers import PRINTERS

__all__ = ["PRINTERS"]

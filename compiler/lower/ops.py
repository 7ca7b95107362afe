"""The op printer table: op kind -> function(emitter, op message, IR path), every family's printers.

Families live in ops_control.py, ops_sync.py, ops_movement.py, ops_matrix.py, ops_math.py,
ops_topk.py and ops_collect.py; each registers its printers in op_printers.py with @printer("kind").
"""

from compiler.lower import ops_collect, ops_control, ops_math, ops_matrix, ops_movement, ops_sync, ops_topk  # noqa: F401  (registrations)
from compiler.lower.op_printers import PRINTERS

__all__ = ["PRINTERS"]

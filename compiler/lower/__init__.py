"""Lowering: verified CAKE IR -> CUDA C++ for one SM target, plus launch metadata.

`lower(kernel)` runs the flat pass list in passes.py. Derived mechanical details
(shared-memory offsets, barrier addresses, ring slots and parities, named-barrier
ids, TMA tensor maps, wgmma descriptors) are computed by passes, never written by
the author. The CUDA it emits includes only the device library under device/include.
"""

import os

from compiler.lower.context import LoweringError
from compiler.lower.passes import PASSES, lower

DEVICE_INCLUDE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "device", "include")

__all__ = ["DEVICE_INCLUDE", "LoweringError", "PASSES", "lower"]

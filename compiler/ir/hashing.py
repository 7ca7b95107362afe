"""Content hashes of kernels: equal IR, equal hash; the key of compile caches and result records.

The hash covers protobuf's deterministic serialization, so it sees exactly what
proto equality sees: field order in text, comments and whitespace do not matter,
while every value does (0.0 and -0.0 differ, as they do in the IR).
"""

import hashlib

SHORT_PREFIX = "ir-"
SHORT_HEX_DIGITS = 16


def ir_hash(kernel):
    """The hex sha256 of the kernel's deterministic serialization (64 hex digits)."""
    return hashlib.sha256(kernel.SerializeToString(deterministic=True)).hexdigest()


def short_hash(kernel):
    """`ir-` and the first 16 hex digits of `ir_hash`: a name for logs, file names and reports."""
    return SHORT_PREFIX + ir_hash(kernel)[:SHORT_HEX_DIGITS]

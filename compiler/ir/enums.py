"""Short names for CAKE IR enum values, shared by the builder and the text form.

An enum value's short name is its name with the enum's type prefix and any
`_UNSPECIFIED` suffix removed, lowercased: DTYPE_BF16 -> "bf16",
TARGET_SM_90A -> "sm_90a", SWIZZLE_NONE_UNSPECIFIED -> "none",
MAJOR_K_UNSPECIFIED -> "k". A value left empty by that (DTYPE_UNSPECIFIED)
is "unspecified".
"""

import functools
import re


def _type_prefix(enum_descriptor):
    # Dtype -> DTYPE_, FragmentLayout -> FRAGMENT_LAYOUT_ (buf's ENUM_VALUE_PREFIX rule).
    return re.sub(r"(?<!^)(?=[A-Z])", "_", enum_descriptor.name).upper() + "_"


def short_name(enum_descriptor, number):
    """The short name of value `number` of an enum (by descriptor)."""
    value = enum_descriptor.values_by_number[number]
    name = value.name
    prefix = _type_prefix(enum_descriptor)
    if name.startswith(prefix):
        name = name[len(prefix):]
    if name.endswith("_UNSPECIFIED"):
        name = name[: -len("_UNSPECIFIED")]
    elif name == "UNSPECIFIED":
        name = ""
    return name.lower() or "unspecified"


@functools.lru_cache(maxsize=None)
def _table(enum_descriptor):
    return {short_name(enum_descriptor, v.number): v.number for v in enum_descriptor.values}


def short_names(enum_descriptor):
    """All short names of an enum, in declaration order."""
    return list(_table(enum_descriptor))


def value_of(enum_descriptor, short):
    """The number of the value called `short`; ValueError listing the valid names otherwise."""
    try:
        return _table(enum_descriptor)[short.lower()]
    except KeyError:
        raise ValueError(
            "%r is not a %s; expected one of: %s"
            % (short, enum_descriptor.name, ", ".join(short_names(enum_descriptor)))
        ) from None

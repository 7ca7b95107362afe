"""IR paths: names of a kernel's message nodes, used by diagnostics and the text form's source map.

A path starts at the root `kernel` and names one message field per step, with
`[i]` after a repeated field: `kernel.roles[1].body[4].loop.body[0].mbarrier_wait`.
An Op is a node (`...body[4]`) and so is the message of its oneof member
(`...body[4].loop`). Only message nodes have paths; scalars are not nodes.
"""

import functools
import re

ROOT = "kernel"
_SEGMENT = re.compile(r"\.([A-Za-z_][A-Za-z0-9_]*)(?:\[([0-9]+)\])?")


def join(path, field, index=None):
    """The path of `field` of the node at `path` (element `index` when the field is repeated)."""
    if index is None:
        return "%s.%s" % (path, field)
    return "%s.%s[%d]" % (path, field, index)


def parent(path):
    """The path of the node enclosing `path`; None for the root."""
    cut = path.rfind(".")
    return None if cut < 0 else path[:cut]


def split(path):
    """The steps of `path` after the root as (field, index or None); ValueError when malformed."""
    if not path.startswith(ROOT):
        raise ValueError("IR path %r does not start at %r" % (path, ROOT))
    steps, pos = [], len(ROOT)
    while pos < len(path):
        m = _SEGMENT.match(path, pos)
        if m is None:
            raise ValueError("malformed IR path %r at character %d" % (path, pos + 1))
        steps.append((m.group(1), None if m.group(2) is None else int(m.group(2))))
        pos = m.end()
    return steps


@functools.lru_cache(maxsize=None)
def _message_fields(descriptor):
    return tuple(
        (f.name, f.is_repeated) for f in descriptor.fields if f.message_type is not None
    )


@functools.lru_cache(maxsize=None)
def _child_steps(descriptor, types=None):
    """How walk finds a message's children, in declaration order: (name, repeated, None) per message field,
    except that consecutive message members of one oneof (Op's ops) are one step (None, False, (oneof name,
    member names)): one WhichOneof instead of a HasField per member. With `types` (full names), only fields of
    those message types."""
    steps = []
    for f in descriptor.fields:
        if f.message_type is None or (types is not None and f.message_type.full_name not in types):
            continue
        oneof = f.containing_oneof
        if oneof is not None and len(oneof.fields) > 1:  # a real oneof (proto3 `optional` makes one of one)
            if steps and steps[-1][2] == oneof.name:
                steps[-1][3].add(f.name)
            else:
                steps.append([None, False, oneof.name, {f.name}])
        else:
            steps.append([f.name, f.is_repeated, None, None])
    return tuple((name, repeated, (oneof, frozenset(members)) if oneof else None)
                 for name, repeated, oneof, members in steps)


def walk(message, root=ROOT, types=None):
    """Yield (path, node) for `message` and every message below it, depth first, fields in
    declaration order (the order the text form prints them in). With `types` (a frozenset of message full
    names), only nodes of those types are visited: the walk does not go below a node of another type."""
    stack = [(root, message)]
    steps_of = {}  # descriptor -> _child_steps (the verifier walks every kernel: keep this loop lean)
    while stack:
        path, node = stack.pop()
        yield path, node
        descriptor = node.DESCRIPTOR
        steps = steps_of.get(descriptor)
        if steps is None:
            steps = steps_of[descriptor] = _child_steps(descriptor, types)
        children = []
        for name, repeated, oneof in steps:
            if oneof is not None:
                name = node.WhichOneof(oneof[0])
                if name in oneof[1]:
                    children.append(("%s.%s" % (path, name), getattr(node, name)))
            elif repeated:
                items = getattr(node, name)
                if items:
                    children.extend(("%s.%s[%d]" % (path, name, i), child) for i, child in enumerate(items))
            elif node.HasField(name):
                children.append(("%s.%s" % (path, name), getattr(node, name)))
        if children:
            stack.extend(reversed(children))


def resolve(kernel, path):
    """The node of `kernel` at `path`; ValueError naming the first step that does not exist."""
    node, here = kernel, ROOT
    for name, index in split(path):
        field = node.DESCRIPTOR.fields_by_name.get(name)
        if field is None or field.message_type is None:
            valid = ", ".join(n for n, _ in _message_fields(node.DESCRIPTOR)) or "none"
            raise ValueError(
                "%s (a %s) has no message field %r (message fields: %s)"
                % (here, node.DESCRIPTOR.name, name, valid)
            )
        if field.is_repeated:
            items = getattr(node, name)
            if index is None or index >= len(items):
                raise ValueError(
                    "%s needs an index below %d" % (join(here, name), len(items))
                    if items
                    else "%s is empty" % join(here, name)
                )
            node, here = items[index], join(here, name, index)
        else:
            if index is not None:
                raise ValueError("%s is not repeated and takes no index" % join(here, name))
            if not node.HasField(name):
                raise ValueError("%s is not set" % join(here, name))
            node, here = getattr(node, name), join(here, name)
    return node

"""Editing helpers the IR rewrites share: NotApplicable, copies, op walks, lookups, expression builders.

Rewrites (rewrites.py, persistent.py) edit a copy of a kernel and raise NotApplicable
when there is nothing to change; these are the pieces every one of them needs.
"""

from cake.ir.v1 import ir_pb2


class NotApplicable(Exception):
    """The rewrite has nothing to change in this kernel; the message says why."""


def copy_kernel(kernel):
    out = ir_pb2.Kernel()
    out.CopyFrom(kernel)
    return out


def walk_ops(ops):
    """(list, index, op) for every op of a body, nested bodies included, in program order."""
    for i, op in enumerate(ops):
        yield ops, i, op
        kind = op.WhichOneof("kind")
        if kind == "loop":
            yield from walk_ops(op.loop.body)
        elif kind == "branch":
            yield from walk_ops(op.branch.then_body)
            yield from walk_ops(op.branch.else_body)


def find_role(kernel, name):
    for role in kernel.roles:
        if role.name == name:
            return role
    raise NotApplicable("no role %r" % name)


def find_region(kernel, name):
    for region in kernel.regions:
        if region.name == name:
            return region
    raise NotApplicable("no region %r" % name)


def sym(name):
    return ir_pb2.Expr(sym=name)


def const(v):
    return ir_pb2.Expr(int=v)


def binary(op, lhs, rhs):
    return ir_pb2.Expr(binary=ir_pb2.BinaryExpr(op=op, lhs=lhs, rhs=rhs))


def equal(lhs, rhs):
    return binary(ir_pb2.BINARY_OP_EQ, lhs, rhs)


def logical_and(lhs, rhs):
    return binary(ir_pb2.BINARY_OP_AND, lhs, rhs)

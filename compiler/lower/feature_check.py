"""The feature-check pass: every instruction family the kernel uses is on its target.

The uses are compiler/targets/op_features.py's, the same the verifier's CAKE-TARGET
rules report, so lowering refuses exactly what verification refuses (and refuses it
whether or not the kernel was verified), before printing anything.
"""

from compiler.lower.context import LoweringError
from compiler.targets import FEATURES, op_features


def check_features(ctx):
    missing = op_features.missing(ctx.kernel, ctx.target)
    if missing:
        use = missing[0]
        raise LoweringError(use.path, "%s needs %s, which %s does not have" % (use.what, FEATURES[use.feature],
                                                                              ctx.target.name))

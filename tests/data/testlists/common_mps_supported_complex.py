# The 2.13 shape of the complex list in torch/testing/_internal/common_mps.py, written for mpsgen's
# tests: the set names the ops whose complex tests are expected to PASS, and the modifier tests
# membership with `not in`.
import unittest

import torch


def mps_ops_modifier(ops, device_type="mps", xfail_exclusion=None):
    # Ops whose complex inputs work on MPS
    SUPPORTED_COMPLEX_OPS = {
        "__radd__",
        "abs",
        "add",
        "asinh",
        "clone",
        "exp",
        "logaddexp",
        "mul",
        # Random ops with complex output, compared through summary stats
        "randn",
        "sigmoid",
        "sub",
        "tanh",
    }

    for op in ops:
        key = op.name + op.variant_test_name
        if key not in SUPPORTED_COMPLEX_OPS:
            op.decorators += (unittest.expectedFailure,)
    return ops

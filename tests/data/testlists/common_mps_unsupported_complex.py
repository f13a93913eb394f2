# A miniature of the 2.15 shape of torch/testing/_internal/common_mps.py, written for mpsgen's tests:
# the complex list names the ops whose complex tests are expected to FAIL, and the modifier tests
# membership with `in`.
import unittest

import torch


def mps_ops_modifier(ops, device_type="mps", xfail_exclusion=None):
    # Ops whose complex tests fail on MPS; every other op tested with complex is expected to pass.
    UNSUPPORTED_COMPLEX_OPS = {
        "cumulative_trapezoid",
        "nn.functional.mish",
        "sgn",
        "special.erfcx",
    }

    UNIMPLEMENTED_XFAILLIST = {
        # lacks an MPS kernel
        "sgn": [torch.bool],
        "polar": None,
    }

    for op in ops:
        key = op.name + op.variant_test_name
        if key in UNIMPLEMENTED_XFAILLIST:
            op.decorators += (unittest.expectedFailure,)
        if key in UNSUPPORTED_COMPLEX_OPS and key not in (xfail_exclusion or []):
            op.decorators += (unittest.expectedFailure,)
    return ops

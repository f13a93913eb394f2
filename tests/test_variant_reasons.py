"""Test-list reasoning that reads the reason and the target: an OpInfo variant belongs to the overload
it calls (`round` with `decimals=0` is `round.decimals`), and expectations about the backend's dtype
support or the numbers a dtype gives stay whatever the kernel registers. The OpInfo texts below are
written for these tests in the shapes upstream uses."""

from __future__ import annotations

import pytest

from mpsgen.dtypes import torch_dtypes_for
from mpsgen.edit.opinfo import plan_opinfo_edits
from mpsgen.facts.rules import MissingOpRule
from mpsgen.facts.views import reaching_stub, stub_serves
from mpsgen.model import Location
from mpsgen.read.nfyaml import NativeFunctions
from mpsgen.read.opinfo import find_opinfos
from mpsgen.read.stubs import Stub

CMI = "torch/testing/_internal/common_methods_invocations.py"

ROUNDING = '''op_db = [
    UnaryUfuncInfo('trunc_to',
                   dtypes=all_types_and(torch.half),
                   sample_inputs_func=sample_inputs_elementwise_unary),
    UnaryUfuncInfo('trunc_to',
                   variant_test_name='places_2',
                   dtypes=floating_types_and(torch.half),
                   sample_kwargs=lambda device, dtype, input: ({'places': 2}, {'places': 2}),
                   sample_inputs_func=partial(sample_inputs_elementwise_unary, op_kwargs={'places': 2})),
    UnaryUfuncInfo('trunc_to',
                   variant_test_name='places_only_in_the_samples',
                   dtypes=floating_types_and(torch.half),
                   sample_inputs_func=partial(sample_inputs_elementwise_unary, op_kwargs={'places': -1})),
]
'''

YAML = '''- func: trunc_to(Tensor self) -> Tensor
  structured_delegate: trunc_to.out

- func: trunc_to.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
  structured: True
  dispatch:
    CPU, CUDA, MPS: trunc_to_out

- func: trunc_to.places(Tensor self, *, int places) -> Tensor
  structured_delegate: trunc_to.places_out

- func: trunc_to.places_out(Tensor self, *, int places, Tensor(a!) out) -> Tensor(a!)
  structured: True
  dispatch:
    CPU, CUDA, MPS: trunc_to_places_out
'''
NF = "aten/src/ATen/native/native_functions.yaml"
PLAIN_STUB = Stub("trunc_to_stub", "unary_fn", ("TensorIteratorBase&",), Location("UnaryOps.h", 1), None)
PLACES_STUB = Stub("trunc_to_places_stub", "places_fn", ("TensorIteratorBase&", "int64_t"), Location("UnaryOps.h", 2), None)


def _refs():
    return find_opinfos(ROUNDING, CMI, "trunc_to")


def test_a_variant_knows_the_keywords_it_passes():
    assert [(r.key, r.call_keywords) for r in _refs()] == [
        ("trunc_to", ()), ("trunc_toplaces_2", ("places",)), ("trunc_toplaces_only_in_the_samples", ("places",))]


@pytest.mark.parametrize(("stub", "keys"), [
    (PLAIN_STUB, ["trunc_to"]),
    # the places stub serves the overloads taking `places`; the plain variant stays (no keywords: not told apart)
    (PLACES_STUB, ["trunc_to", "trunc_toplaces_2", "trunc_toplaces_only_in_the_samples"]),
])
def test_a_variant_reaches_the_stub_of_the_overload_it_calls(stub, keys):
    entries = NativeFunctions(YAML, NF).op_entries("trunc_to")
    assert [stub_serves(e, PLAIN_STUB) for e in entries] == [True, True, False, False]
    kept = reaching_stub(((CMI, _refs()),), entries, stub)
    assert [r.key for _, refs in kept for r in refs] == keys


DECORATED = '''op_db = [
    UnaryUfuncInfo('swirl',
        dtypes=all_types_and(torch.half),
        skips=(
            # Exception: Tensor-likes are not close!
            # Greatest absolute difference: inf at index (3,)
            DecorateInfo(unittest.expectedFailure, "TestConsistency", "test_output_grad_match",
                         device_type="mps", dtypes=(torch.float16,)),
            # lacks a float16 kernel on MPS
            DecorateInfo(unittest.expectedFailure, "TestConsistency", "test_output_match",
                         device_type="mps", dtypes=(torch.float16,)),
        ),
    ),
]

python_ref_db = [
    ElementwiseUnaryPythonRefInfo(
        "_refs.swirl",
        torch_opinfo_name="swirl",
        skips=(
            DecorateInfo(unittest.expectedFailure, "TestCommon", "test_python_ref",
                         device_type="mps", dtypes=(torch.float16,)),
            # TypeError: Trying to convert ComplexDouble to the MPS backend but it does not have support for that dtype.
            DecorateInfo(unittest.expectedFailure, "TestCommon", "test_python_ref_torch_fallback",
                         device_type="mps", dtypes=(torch.complex32,)),
        ),
    ),
]
'''


def test_numerical_conversion_and_python_ref_expectations_stay():
    refs = find_opinfos(DECORATED, CMI, "swirl")
    rule = MissingOpRule(frozenset({"swirl", "swirl.out", "swirl_"}), frozenset({"swirl"}))
    after, changes = plan_opinfo_edits(DECORATED, CMI, refs, torch_dtypes_for(("float", "complex")), reasons=rule)
    verdicts = [(c.key, c.action, c.location.line) for c in changes]
    assert verdicts == [("swirl", "kept", 7), ("swirl", "removed-decorator", 10),
                        ("_refs.swirl", "kept", 21), ("_refs.swirl", "kept", 24)]
    details = [c.detail for c in changes]
    assert "the numbers the dtype gives" in details[0]
    assert "python reference" in details[2] and "dtype support" in details[3]
    # exactly the fixed decorator and its comment go
    assert after == DECORATED.replace('''            # lacks a float16 kernel on MPS
            DecorateInfo(unittest.expectedFailure, "TestConsistency", "test_output_match",
                         device_type="mps", dtypes=(torch.float16,)),
''', "")

"""Facts of ATen that a checkout without `aten/src/ATen/native/*.cpp` (a wheel-built one) cannot
show, recorded once here, in our own words (names and values, no upstream text). Each is used only
where the checkout has no .cpp to read it from; with the .cpp the call is read from it, never from
here.

- `RECORDED_CALLS`: what a shared function hands its dispatch stub. `complete` records say the
  call is all the function dispatches to (threshold_backward_out: threshold's stub with value 0),
  so the record stands for the function (`facts.views.shared_functions`); the losses' records give
  the values their stubs get (the norm of the reduction) for `try`, and nothing more.
- `RECORDED_ITERATORS`: how a device function that builds its own iterator builds it
  (log_sigmoid_backward's CUDA functions: output grad_input, inputs self then grad_output, without
  the CPU forward's buffer), from which a per-device op's MPS body is written
  (`facts.perdevice`).

A record is confirmed against the checkout before use: the stub must be declared with the recorded
parameters (`mismatch`), and a refusal names any difference."""

from __future__ import annotations

from dataclasses import dataclass

from mpsgen.model import Location
from mpsgen.read.stubcall import StubArg, StubCall
from mpsgen.read.stubs import Stub

RECORD_SOURCE = "mpsgen/facts/recorded.py"


@dataclass(frozen=True)
class RecordedCall:
    stub: str
    signature: tuple[str, ...]  # the stub's declared parameters the call was recorded against
    call: StubCall
    complete: bool  # the call is all the function dispatches to

    @property
    def function(self) -> str:
        return self.call.function

    @property
    def source(self) -> str:
        return self.call.location.path

    def describe(self) -> str:
        values = " and ".join(a.text for a in self.call.args)
        return (f"recorded call of ATen's {self.source.rsplit('/', 1)[-1]} ({self.function} passes {self.stub} "
                f"{values or 'nothing'}): this checkout has no .cpp to read it from (recorded in {RECORD_SOURCE})")


def mismatch(record: RecordedCall, stub: Stub | None) -> str:
    """Why the checkout's declaration contradicts the record ("" when it confirms it)."""
    if stub is None:
        return f"{record.describe()}, but this checkout's headers declare no {record.stub}"
    if tuple(stub.params) != record.signature:
        return (f"{record.describe()}, but {stub.name} is declared at {stub.location} as {stub.signature}, "
                f"not void(*)({', '.join(record.signature)}) as recorded")
    return ""


_LOSS = "aten/src/ATen/native/Loss.cpp"
_ACTIVATION = "aten/src/ATen/native/Activation.cpp"
_LOSS_BACKWARD = (("const Tensor&", "grad_output"), ("const Tensor&", "input"), ("const Tensor&", "target"),
                  ("int64_t", "reduction"))
_TERNARY_SCALAR_DOUBLE = ("TensorIterator&", "const Scalar&", "double")

RECORDED_CALLS: tuple[RecordedCall, ...] = (
    # the mean reduction's norm is 2 / numel, else 2
    RecordedCall("mse_backward_stub", ("TensorIterator&", "const Scalar&"), StubCall(
        "mse_loss_backward_out", Location(_LOSS, 0),
        (StubArg("norm", "norm", "reduction == Reduction::Mean ? 2. / input.numel() : 2.", ("reduction", "input")),),
        _LOSS_BACKWARD + (("Tensor&", "grad_input"),)), False),
    # the norm (1 / numel under a mean, else 1), then delta as given
    RecordedCall("huber_backward_stub", _TERNARY_SCALAR_DOUBLE, StubCall(
        "huber_loss_backward_out", Location(_LOSS, 0),
        (StubArg("norm", "norm", "(reduction == Reduction::Mean) ? (1. / input.numel()) : 1.", ("reduction", "input")),
         StubArg("delta", "delta", "delta", ("delta",))),
        _LOSS_BACKWARD + (("double", "delta"), ("Tensor&", "grad_input"))), False),
    # the same norm, then beta as given
    RecordedCall("smooth_l1_backward_stub", _TERNARY_SCALAR_DOUBLE, StubCall(
        "smooth_l1_loss_backward_out", Location(_LOSS, 0),
        (StubArg("norm", "norm", "reduction == Reduction::Mean ? 1. / input.numel() : 1.", ("reduction", "input")),
         StubArg("beta", "beta", "beta", ("beta",))),
        _LOSS_BACKWARD + (("double", "beta"), ("Tensor&", "grad_input"))), False),
    # the backward of threshold is threshold's own stub with the threshold given and value 0
    RecordedCall("threshold_stub", ("TensorIteratorBase&", "const Scalar&", "const Scalar&"), StubCall(
        "threshold_backward_out", Location(_ACTIVATION, 0),
        (StubArg("threshold", "threshold", "threshold", ("threshold",)), StubArg("0", "", "0", ())),
        (("const Tensor&", "grad"), ("const Tensor&", "self"), ("const Scalar&", "threshold"),
         ("const Tensor&", "grad_input"))), True),
)


def recorded_call_of_stub(stub: str) -> StubCall | None:
    """What a shared function is recorded to pass `stub` (try's scalar values)."""
    return next((r.call for r in RECORDED_CALLS if r.stub == stub), None)


def recorded_call_of_function(function: str) -> RecordedCall | None:
    """The complete record of the shared function `function`, if any."""
    return next((r for r in RECORDED_CALLS if r.function == function and r.complete), None)


@dataclass(frozen=True)
class RecordedIterator:
    """How a device function builds the iterator it hands its stub: the schema names of its output
    and inputs, in order."""

    function: str  # the device function recorded (the CUDA one)
    stub: str
    signature: tuple[str, ...]
    output: str  # schema name of the output (the out= argument)
    inputs: tuple[str, ...]  # schema names of the inputs, in the iterator's order
    source: str
    like: str = ""  # a functional one allocates its output empty like this input and returns the iterator's output

    def describe(self) -> str:
        return (f"recorded iterator of ATen's {self.source.rsplit('/', 1)[-1]} ({self.function} builds it with "
                f"output {self.output} and inputs {', '.join(self.inputs)}, then calls {self.stub}): this checkout "
                f"has no .cpp to read it from (recorded in {RECORD_SOURCE})")


RECORDED_ITERATORS: tuple[RecordedIterator, ...] = (
    # MPS takes CUDA's shape: the CPU functions also read the forward's buffer, which MPS's forward leaves empty
    RecordedIterator("log_sigmoid_backward_cuda_out", "log_sigmoid_backward_stub", ("TensorIterator&",),
                     "grad_input", ("self", "grad_output"), _ACTIVATION),
    RecordedIterator("log_sigmoid_backward_cuda", "log_sigmoid_backward_stub", ("TensorIterator&",),
                     "grad_input", ("self", "grad_output"), _ACTIVATION, like="grad_output"),
)


def recorded_iterator(function: str) -> RecordedIterator | None:
    return next((r for r in RECORDED_ITERATORS if r.function == function), None)

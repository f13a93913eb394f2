"""Which functor serves an op on MPS: the one place `try` learns it (to be replaced by the shared
facts model)."""

from __future__ import annotations

from dataclasses import dataclass

from mpsgen.checkout import Checkout
from mpsgen.errors import MpsgenError
from mpsgen.model import Location

# Metal type -> torch dtype name, for the types a kernel file registers.
METAL_TO_TORCH = {
    "float": "float32", "half": "float16", "bfloat": "bfloat16", "long": "int64", "int": "int32",
    "short": "int16", "uchar": "uint8", "char": "int8", "bool": "bool", "float2": "complex64",
    "half2": "complex32",
}
TORCH_TO_METAL = {torch: metal for metal, torch in METAL_TO_TORCH.items()}


@dataclass(frozen=True)
class FunctorFacts:
    op: str
    functor: str  # kernel name, without `_functor`
    kernel_file: str
    location: Location  # the functor's struct
    arity: int
    alpha: bool
    input_types: tuple[str, ...]  # Metal input types it is registered for, in METAL_TO_TORCH order


def functor_facts(checkout: Checkout, op: str) -> FunctorFacts:
    """op -> (kernel file, functor, arity, registered input types), following the MPS registration of
    the op's stub to the host function, its `exec_*_kernel(iter, "name")` and the .metal file that
    defines `name_functor` (verify's reading of the checkout)."""
    from mpsgen.verify import _facts, _Reader, check_op_names, registered_dtypes

    check_op_names(checkout, (op,))
    reader = _Reader(checkout)
    facts = _facts(reader, op)
    if facts.host is None or not facts.host.kernel:
        where = facts.shared[0].line.location if facts.shared else facts.entries[0].location
        raise MpsgenError(f"{op} has no native Metal kernel to run in this checkout", location=where,
                          hint=f"give it one with `mpsgen new-op {op}` or `mpsgen migrate {op}`; `mpsgen verify {op}` says what is missing")
    name = facts.host.kernel
    if len(facts.kernel_files) != 1:
        where = Location(facts.host.location.path, facts.host.kernel_line)
        found = ", ".join(facts.kernel_files) or "no .metal file"
        raise MpsgenError(f"kernel \"{name}\" should have exactly one {name}_functor, found in {found}", location=where,
                          hint="define the functor once, in the family's .metal file")
    rel = facts.kernel_files[0]
    text = checkout.read(rel)
    start = reader.kernel(rel).functors[name][0]
    location = Location(rel, text.count("\n", 0, start) + 1)
    registered = registered_dtypes(text, reader.kernel(rel)).get(name, (set(), 0))[0]
    types = tuple(metal for metal, torch in METAL_TO_TORCH.items() if torch in registered)
    if not types:
        raise MpsgenError(f"{name}_functor is not registered for any dtype", location=location,
                          hint="add its REGISTER_* lines (mpsgen new-op writes them)")
    carrier = facts.shared[0].entry
    alpha = bool(facts.stub is not None and facts.stub.scalar_count)
    return FunctorFacts(op, name, rel, location, len(carrier.tensor_inputs), alpha, types)

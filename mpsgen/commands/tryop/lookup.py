"""Which functor serves an op on MPS, as `try` needs it: read from the shared op facts."""

from __future__ import annotations

from dataclasses import dataclass

from mpsgen.commands.scan import accepting_command
from mpsgen.edit.workspace import Workspace
from mpsgen.errors import MpsgenError
from mpsgen.facts.views import METAL_TO_TORCH, Views, read_op
from mpsgen.model import Location
from mpsgen.read.checkout import Checkout

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
    """op -> (kernel file, functor, arity, registered input types), from the shared op facts
    (`mpsgen.facts.views.read_op`): the MPS registration of the op's stub, its host function's
    `exec_*_kernel(iter, "name")` and the .metal file that defines `name_functor`."""

    views = Views(Workspace(checkout))
    facts = read_op(views, op)
    if facts.host is None or not facts.host.kernel:
        where = facts.shared[0].line.location if facts.shared else facts.entries[0].location

        command, refusal = accepting_command(checkout, op)
        hint = (f"give it one with `{command}`" if command else
                f"mpsgen cannot give it one as it stands: {refusal.message}" + (f"; {refusal.hint}" if refusal.hint else ""))
        raise MpsgenError(f"{op} has no native Metal kernel to run in this checkout", location=where, hint=hint)
    name = facts.functor
    if len(facts.kernel_files) != 1:
        where = Location(facts.host.location.path, facts.host.kernel_line)
        found = ", ".join(facts.kernel_files) or "no .metal file"
        raise MpsgenError(f"kernel \"{name}\" should have exactly one {name}_functor, found in {found}", location=where,
                          hint="define the functor once, in the family's .metal file")
    rel = facts.kernel_files[0]
    location = Location(rel, views.kernel(rel).functor_line(checkout.read(rel), name))
    registered = facts.registered_dtypes
    types = tuple(metal for metal, torch in METAL_TO_TORCH.items() if torch in registered)
    if not types:
        raise MpsgenError(f"{name}_functor is not registered for any dtype", location=location,
                          hint="add its REGISTER_* lines (mpsgen new-op writes them)")
    carrier = facts.shared[0].entry
    alpha = bool(facts.stub is not None and facts.stub.scalar_count)
    return FunctorFacts(op, name, rel, location, len(carrier.tensor_inputs), alpha, types)

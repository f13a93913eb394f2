"""What an op's kernel and host steps write, decided once in facts/ (`mpsgen.facts.plan`) before any
file is planned: the functor text, the registration lines, the dtypes served, a params kernel's
struct and registration macro, a reduction's struct, pairs and launcher. edit/ places them."""

from __future__ import annotations

from dataclasses import dataclass

from mpsgen.dtypes import METAL_INPUT_TYPES
from mpsgen.errors import MpsgenError
from mpsgen.facts.functor import Body
from mpsgen.facts.params import ParamsSpec
from mpsgen.facts.reduction import RegistrationMacro, ReductionBody
from mpsgen.model import Location, Note
from mpsgen.read.checkout import C10_METAL_DIR
from mpsgen.read.kernelfile import Registration
from mpsgen.read.reduction import Pair

# The op-math type of each Metal input type (at::toOpMathType): a ternary op's Scalar is passed in it
# (`OPMATH_SCALAR_TYPE`, as 2.15 passes addcmul's value: addcmul_dense_half_half_float), so the value
# is not rounded to half before the functor multiplies with it as CPU does in float.
OPMATH_TYPES = {"half": "float", "bfloat": "float", "half2": "float2"}
OPMATH_SCALAR_TYPE = "at::toOpMathType(iter.common_dtype())"
OPMATH_HEADER = "ATen/OpMathType.h"

# Group macros defined by kernel files (e.g. BinaryKernel.metal): used when present, as upstream does.
BINARY_GROUP_MACROS = {
    "float": "REGISTER_FLOAT_BINARY_OP",
    "int2float": "REGISTER_INT2FLOAT_BINARY_OP",
    "integer": "REGISTER_INTEGER_BINARY_OP",
}


def registrations_for(name: str, arity: int, alpha: bool, groups: tuple[str, ...], macros: frozenset[str], path: str,
                      output: str = "", without: tuple[str, ...] = ()) -> list[Registration]:
    """The REGISTER_* lines that instantiate `name`'s functor for the dtype groups; `output`: the
    output type of every one (bool for a logical op), else as the group says (`int2float`: float,
    the others the input type); none for the Metal input types `without` (a group-wide macro is
    then not used: it would register them)."""
    out: list[Registration] = []
    for group in groups:
        types = METAL_INPUT_TYPES[group]
        if (arity == 2 and not alpha and not output and group in BINARY_GROUP_MACROS
                and BINARY_GROUP_MACROS[group] in macros and not set(types) & set(without)):
            out.append(Registration(BINARY_GROUP_MACROS[group], (name,)))
            continue
        if arity == 1:
            macro = "REGISTER_UNARY_ALPHA_OP" if alpha else "REGISTER_UNARY_OP"
        elif arity == 2:
            macro = "REGISTER_BINARY_ALPHA_OP" if alpha else "REGISTER_BINARY_OP"
        else:
            macro = "REGISTER_TERNARY_ALPHA_OP" if alpha else "REGISTER_TERNARY_OP"
        if macro not in macros:
            raise MpsgenError(
                f"the checkout defines no {macro} macro (looked in {C10_METAL_DIR}/*.h and {path})",
                hint="this checkout's Metal vocabulary differs from what mpsgen knows; register the functor by hand",
            )
        for t in types:
            if t in without:
                continue
            out_type = output or ("float" if group == "int2float" else t)
            # alpha kernels: (input, alpha, output); the host passes alpha in the iterator's common
            # dtype, which is float for integer inputs of an op that promotes them to float; a
            # ternary op's in that dtype's op-math type (OPMATH_SCALAR_TYPE)
            alpha_type = OPMATH_TYPES.get(out_type, out_type) if arity == 3 else out_type
            args = (name, t, alpha_type, out_type) if alpha else (name, t, out_type)
            out.append(Registration(macro, args, group))
    return out


@dataclass(frozen=True)
class ReductionChoice:
    """What the kernel and host steps write for a reduction, decided once (`mpsgen.facts.plan.choose_kernel`)."""

    body: ReductionBody
    struct_text: str
    macro: RegistrationMacro
    register_macro: str  # REGISTER_PROD
    pairs: tuple[Pair, ...]
    launcher: str  # the host function the op's kernel function calls with its prefix
    launcher_location: Location  # the function calling the launcher so, to place the op's after
    rest: str = ""  # what the calls pass after the prefix (`, std::nullopt`), as the base op's call does
    instances: tuple[tuple[str, str], ...] = ()  # (prefix, op type) registered; empty: the body's own
    orders: tuple = ()  # a load-mode reduction's PlannedOrders
    converted: tuple[str, ...] = ()  # input types with no kernel, converted to the output's type first

    @property
    def prefix(self) -> str:
        return self.body.prefixes()[0]

    def registered(self) -> tuple[tuple[str, str], ...]:
        """(prefix, op type) of each registration the op adds."""
        if self.body.load_modes:
            return self.instances
        return self.body.instances()

    def define(self) -> str:
        """`#define REGISTER_<OP>(TI, TO) ...`: one registration-macro call per (prefix, op type)."""
        calls = [f'{self.macro.name}("{prefix}", TI, TO, {op_type})' for prefix, op_type in self.registered()]
        if len(calls) == 1:
            return f"#define {self.register_macro}(TI, TO) {calls[0]}"
        return f"#define {self.register_macro}(TI, TO) \\\n  " + "; \\\n  ".join(calls)


@dataclass(frozen=True)
class KernelChoice:
    """What the kernel and host steps write, decided before any file is planned."""

    source: str  # catalog | expr | placeholder | existing
    text: str  # the functor ("" keeps an existing one)
    registrations: tuple[Registration, ...]  # the registration lines to add
    registered: frozenset[str]  # torch dtypes the kernel serves after the change
    registration_macro: str = ""  # a #define the registrations use (params kernels)
    params: ParamsSpec | None = None  # with its groups, for params kernels
    notes: tuple[Note, ...] = ()
    reduction: ReductionChoice | None = None  # a reduction's struct, registrations and launcher
    body: Body | None = None  # the functor body chosen, for the run-time check
    params_launcher: object | None = None  # the library's ternary params launcher to add (a TernaryLauncher)
    alpha_launcher: object | None = None  # the Scalar-taking exec_ternary_kernel pieces to add (a TernaryAlphaLauncher)
    scalar_type: str = ""  # what the host passes as the launcher's scalar_arg_type (OPMATH_SCALAR_TYPE), "" nothing

"""The Metal source `try` runs, and the host program around it.

`shader_source` builds the one string both paths use: the kernel file as it stands, its checkout
headers inlined (torch.mps.compile_shader sees no include path), `#line` directives keeping every
line attributable to its real file, and one `mpsgen_try_<type>` kernel per registered input type."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path

from mpsgen.commands.tryop.lookup import METAL_TO_TORCH, FunctorFacts
from mpsgen.commands.tryop.values import KINDS, Inputs, float32_bits, kind
from mpsgen.facts.templates import Templates
from mpsgen.read.checkout import Checkout
from mpsgen.read.cpp import mask_code
from mpsgen.read.metalhost.rewrite import include_roots

_INCLUDE_LINE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*([<"])([^>"\n]+)[>"]')
_PRAGMA_ONCE = re.compile(r"^[ \t]*#[ \t]*pragma[ \t]+once\b")
TRY_KERNELS_NAME = "<mpsgen try kernels>"
# The driver's headers, then the prelude: the Metal compiler has `__METAL__` and its types before a
# file's first line, and 2.15's c10/metal/common.h tests `__METAL__` before any metal header is
# included (metal-compile passes the prelude with -include; the driver's headers must come first).
_HOST_HEADERS = "#include <csetjmp>\n#include <csignal>\n#include <metal_stdlib>\n"


def _resolve(checkout: Checkout, including: str, quote: str, name: str) -> str | None:
    """The checkout path an include names (on disk, or a header the plan creates)."""
    root = checkout.root
    bases = ([root / Path(including).parent] if quote == '"' else []) + list(include_roots(root))
    for base in bases:
        path = base / name
        if path.is_file():
            try:
                return path.resolve().relative_to(root.resolve()).as_posix()
            except ValueError:
                return None
        try:
            rel = path.relative_to(root).as_posix()
        except ValueError:
            continue
        if checkout.exists(rel):
            return rel
    return None


def bundle(checkout: Checkout, rel: str) -> str:
    """`rel` with every checkout header it includes inlined once, in include order, each preceded by
    `#line 1 "<header>"` and followed by a `#line` back to the includer. Other includes
    (`<metal_stdlib>`) stay."""
    seen: set[str] = set()
    root = checkout.root

    def expand(path: str) -> list[str]:
        text = checkout.read(path)
        masked = mask_code(text).split("\n")
        out = []
        for number, line in enumerate(text.split("\n"), start=1):
            line = line.rstrip("\r")
            m = _INCLUDE_LINE.match(line)
            code = masked[number - 1] if number - 1 < len(masked) else ""
            if m and code.lstrip().startswith("#"):
                found = _resolve(checkout, path, m.group(1), m.group(2).strip())
                if found is not None:
                    if found not in seen:
                        seen.add(found)
                        out.append(f'#line 1 "{found}"')
                        out.extend(expand(found))
                    out.append(f'#line {number + 1} "{path}"')
                    continue
            out.append("" if _PRAGMA_ONCE.match(line) else line)
        return out

    seen.add(rel)
    return "\n".join([f'#line 1 "{rel}"', *expand(rel)]) + "\n"


def kernel_arity(facts: FunctorFacts) -> int:
    return facts.kernel_arity or facts.arity


def shader_source(checkout: Checkout, facts: FunctorFacts, types: tuple[str, ...]) -> str:
    """The complete Metal source `try` runs: on MPS through torch.mps.compile_shader, on the host
    through the prelude (mpsgen's tests compile this exact string)."""
    alphas = dict(facts.alpha_types)
    kernels = Templates(checkout.root).render(
        "try_kernels.metal.j2", functor=facts.functor, arity=kernel_arity(facts), types=list(types),
        alphas={t: alphas[t] for t in types} if facts.alpha else {},
        opmath=[t for t in types if t in facts.opmath_types and not facts.alpha],
        struct=any(a not in KINDS for a in alphas.values()))
    return bundle(checkout, facts.kernel_file) + f'#line 1 "{TRY_KERNELS_NAME}"\n' + kernels


@dataclass(frozen=True)
class _Set:
    tag: str  # appended to the type in the driver's output line: `#<scalar set index>`
    assignments: tuple[str, ...]  # C++ statements filling `alpha`


@dataclass(frozen=True)
class _Case:
    type: str
    count: int
    storage: str
    decode: str
    data: tuple[str, ...]
    alpha_type: str = ""
    sets: tuple[_Set, ...] = (_Set("", ()),)


def value_literal(value, metal_type: str, target: str) -> str:
    """C++ giving `target` (of Metal type `metal_type`) the value `value` exactly."""
    k = kind(metal_type)
    if k == "float":
        return f"{target} = mpsgen_float_in<decltype({target})>({_float_bits_literal(value)})"
    if k == "bool":
        return f"{target} = {'true' if value else 'false'}"
    if k == "complex":
        # not `static_cast<float2>(-1)`: a scalar fills both components, -1-1j
        z = complex(value)
        return (f"{target} = mpsgen_complex_in<decltype({target})>({_float_bits_literal(z.real)}, "
                f"{_float_bits_literal(z.imag)})")
    return f"{target} = static_cast<decltype({target})>({_long_literal(int(value))})"


def scalar_sets_cpp(alpha_type: str, fields, sets) -> tuple[_Set, ...]:
    """The driver's blocks for one input type: (set index, field values) -> assignments to `alpha`
    (a struct's fields, or alpha itself)."""
    out = []
    for index, values in sets:
        if alpha_type in KINDS:
            assignments = (value_literal(values[0], fields[0].type, "alpha"),)
        else:
            assignments = tuple(value_literal(v, f.type, f"alpha.{f.name}") for f, v in zip(fields, values))
        out.append(_Set(f"#{index}", assignments))
    return tuple(out)


def _long_literal(v: int) -> str:
    return "(-9223372036854775807L - 1)" if v == -(1 << 63) else f"{v}L"


def _float_bits_literal(x: float) -> str:
    return f"0x{float32_bits(x):08x}u" if not math.isnan(x) else "0x7fc00000u"


def _case(inputs: Inputs) -> _Case:
    k = kind(inputs.metal_type)
    data = []
    for column in inputs.columns:
        if k == "float":
            data.append(", ".join(_float_bits_literal(v) for v in column))
        elif k == "complex":
            data.append(", ".join(f"{_float_bits_literal(v.real)}, {_float_bits_literal(v.imag)}" for v in column))
        else:
            data.append(", ".join(_long_literal(int(v)) for v in column))
    if k == "float":
        storage, decode = "uint", "mpsgen_float_in<T>(@[i])"
    elif k == "complex":
        storage, decode = "uint", "mpsgen_complex_in<T>(@[2 * i], @[2 * i + 1])"
    else:
        storage, decode = "long", "static_cast<T>(@[i])"
    return _Case(inputs.metal_type, inputs.count, storage, decode, tuple(data))


def host_program(checkout: Checkout, facts: FunctorFacts, source: str, inputs: list[Inputs],
                 scalars: dict | None = None) -> str:
    """`source` with the host driver around it (not part of what MPS would compile): the driver's
    headers before it, the driver after it. `inputs` are the kernel's operands; `scalars`, for an
    alpha or params kernel: input type -> (alpha type, fields, [(set index, field values)])."""
    from dataclasses import replace

    cases = []
    for i in inputs:
        case = _case(i)
        if scalars is not None:
            alpha_type, fields, sets = scalars[i.metal_type]
            case = replace(case, alpha_type=alpha_type, sets=scalar_sets_cpp(alpha_type, fields, sets))
        cases.append(case)
    main = Templates(checkout.root).render(
        "try_host_main.cpp.j2", functor=facts.functor, arity=kernel_arity(facts), type_names=list(METAL_TO_TORCH),
        cases=cases)
    # The driver's own headers come first: the prelude poisons `double` after its standard headers.
    return _HOST_HEADERS + source + '#line 1 "<mpsgen try host driver>"\n' + main

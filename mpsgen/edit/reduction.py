"""The reduction family's edits (facts: `mpsgen.facts.reduction`): the op struct and its
registrations in the kernel file, the host function calling the file's launcher with the op's
prefix and its `REGISTER_DISPATCH`, and (migrate) the op's case taken out of the MPSGraph helper
other ops still use. Each takes text and facts and returns a `FileChange`; bytes outside the spans
it replaces never change."""

from __future__ import annotations

import re

from mpsgen.errors import MpsgenError
from mpsgen.facts.choice import ReductionChoice
from mpsgen.facts.reduction import RegistrationMacro
from mpsgen.facts.views import HostView
from mpsgen.model import Change, FileChange, Location, Note
from mpsgen.read.cpp import mask_code, match_brace
from mpsgen.read.reduction import SCALAR_TYPE_METAL, ReductionKernels
from mpsgen.textedit import LineIndex, newline_of, replace_spans

_OP_STRUCT = re.compile(r"^(?:template\s*<[^;{]*>\s*)?struct\s+(\w+Op)\s*\{", re.M)


def plan_reduction_kernel(text: str, path: str, choice: ReductionChoice, kernels: ReductionKernels) -> FileChange:
    """The op struct after the file's last `struct ...Op` definition, and `#define REGISTER_<OP>(TI,
    TO) <registration macro>("<op>_", TI, TO, <Struct><TO>)` with one call per pair after the last
    line registering an op through the registration macro. What the file already has stays."""
    newline = newline_of(text)
    masked = mask_code(text)
    index = LineIndex(text)
    spans: list[tuple[int, int, str]] = []
    changes: list[Change] = []
    if choice.struct_text and not re.search(rf"\bstruct\s+{choice.body.struct}\b", masked):
        structs = [m for m in _OP_STRUCT.finditer(masked)]
        if not structs:
            raise MpsgenError(f"{path} defines no `struct ...Op` reduction op to place {choice.body.struct} after",
                              location=Location(path, 1), hint="add the op struct by hand")
        last = structs[-1]
        close = match_brace(masked, masked.index("{", last.start()))
        anchor = index.end_of(index.line_of(close))
        spans.append((anchor, anchor, newline + choice.struct_text.replace("\n", newline)))
        changes.append(Change("functor", Location(path, index.line_of(close) + 2), f"struct {choice.body.struct}"))
    prefixes = [prefix[:-1] for prefix, _ in choice.registered()]
    todo = [pair for pair in choice.pairs if any(pair not in kernels.pairs(prefix) for prefix in prefixes)]
    if todo:
        define = choice.define().replace("\n", newline)
        defined = re.search(rf"^[ \t]*#[ \t]*define[ \t]+{choice.register_macro}\b", text, re.M)
        block = "" if defined else newline + define + newline
        block += newline + "".join(f"{choice.register_macro}({i}, {o});{newline}" for i, o in todo)
        line = _last_macro_registration(kernels, choice.macro)
        anchor = index.end_of(line) if line else len(text)
        spans.append((anchor, anchor, block))
        changes.append(Change("register", Location(path, line + 2), f"{choice.register_macro}: {len(todo)} (input, output) pairs"))
    return FileChange(path, replace_spans(text, spans), tuple(changes))


def _last_macro_registration(kernels: ReductionKernels, macro: RegistrationMacro) -> int:
    """The last line registering an op through the registration macro: the last line instantiating
    a pair-named kernel of an op registered for as many variants as the macro instantiates."""
    widest = max((len(v) for v in kernels.ops.values()), default=0)
    lines = [line for by_variant in kernels.ops.values() if len(by_variant) == widest
             for by_pair in by_variant.values() for line in by_pair.values()]
    return max(lines, default=0)


def plan_reduction_host(text: str, path: str, *, stub: str, function: str, iterator_type: str,
                        choice: ReductionChoice, registered: list, function_text: str = "") -> FileChange:
    """`static void <function>(<iterator_type> iter) { <launcher>(iter, "<op>_"); }` (or the given
    `function_text`: a load-mode reduction's routing) after the last function of the file calling
    the launcher with a prefix alone, else after the function whose call it copies, and
    `REGISTER_DISPATCH(<stub>, &<function>)` after the file's last registration, in its style."""
    if registered:
        where = registered[0]
        return FileChange(path, text, notes=(Note("kept", f"{stub} is already registered for MPS ({where.function}); kept as is", where.location),))
    newline = newline_of(text)
    masked = mask_code(text)
    index = LineIndex(text)
    callers = list(re.finditer(rf"^static\s+void\s+(\w+)\s*\([^)]*\)\s*\{{\s*{choice.launcher}\s*\(\s*\w+\s*,\s*\"\s*\"\s*(?:,[^;]*)?\)\s*;\s*\}}",
                               masked, re.M))
    if callers:
        anchor = index.end_of(index.line_of(callers[-1].end()))
    else:
        # after the whole function calling the launcher (its closing brace's line)
        start = index.start_of(choice.launcher_location.line)
        brace = masked.find("{", start)
        anchor = index.end_of(index.line_of(match_brace(masked, brace))) if brace >= 0 else index.end_of(choice.launcher_location.line)
    if not function_text:
        call = f"{choice.launcher}(iter, \"{choice.prefix}\"{choice.rest});"
        branches = "".join(_converted_branch(t, choice) for t in choice.converted)
        function_text = f"static void {function}({iterator_type} iter) {{\n{branches}  {call}\n}}\n"
    function_text = function_text.replace("\n", newline) if newline != "\n" else function_text
    registrations = HostView.read(text, path).direct_registrations()
    if not registrations:
        raise MpsgenError(f"{path} registers no stub with REGISTER_DISPATCH to place {stub}'s after",
                          location=Location(path, index.line_count), hint="register the stub by hand")
    last = registrations[-1].location.line
    line = text[index.start_of(last):index.end_of(last)]
    semicolon = ";" if line.rstrip().endswith(";") else ""
    ampersand = "&" if "&" in line else ""
    register = f"REGISTER_DISPATCH({stub}, {ampersand}{function}){semicolon}{newline}"
    after = index.end_of(last)
    spans = [(anchor, anchor, newline + function_text), (after, after, register)]
    signature = function_text.split("{", 1)[0].strip()
    changes = (Change("host-stub", Location(path, index.line_of(anchor) + 2), signature),
               Change("register", Location(path, last + 1), register.strip()))
    return FileChange(path, replace_spans(text, spans), changes)


_TORCH_SCALAR = {metal: name for name, metal in SCALAR_TYPE_METAL.items()}


def _converted_branch(metal_type: str, choice: ReductionChoice) -> str:
    """The host function's branch serving an input type the op has no kernel for: the input in the
    output's type, reduced over the same geometry by the op's own kernels for that type."""
    return (f"  // no {choice.prefix}reduction* kernel takes {metal_type}: reduce it in the output's type\n"
            f"  if (iter.input(0).scalar_type() == k{_TORCH_SCALAR[metal_type]}) {{\n"
            f"    Tensor output = iter.output(0);\n"
            f"    auto converted = TensorIterator::reduce_op(output, iter.input(0).to(output.scalar_type()));\n"
            f"    {choice.launcher}(converted, \"{choice.prefix}\"{choice.rest});\n"
            f"    return;\n"
            f"  }}\n")


# ------------------------------------------------------------------------- the helper's own case

_QUALIFIED = re.compile(r"\b(\w+)\s*::\s*(\w+)\b")


def dropped_enum_values(before: str, after: str) -> list[tuple[str, str]]:
    """The values of an enum the file defines (`enum E {`, `enum class E {`) that the removed code
    named and code still names: the cases of a shared helper that served the removed kernels."""
    masked_before, masked_after = mask_code(before), mask_code(after)
    enums = set(re.findall(r"\benum\s+(?:class\s+)?(\w+)\s*(?::\s*\w+\s*)?\{", masked_after))
    count_before: dict[tuple[str, str], int] = {}
    for m in _QUALIFIED.finditer(masked_before):
        count_before[m.groups()] = count_before.get(m.groups(), 0) + 1
    out = []
    for key, n in count_before.items():
        left = sum(1 for m in _QUALIFIED.finditer(masked_after) if m.groups() == key)
        if key[0] in enums and 0 < left < n:
            out.append(key)
    return out


def plan_helper_case_removal(text: str, path: str, before: str) -> FileChange:
    """(migrate) Take a removed op's case out of the helper other ops still use: for each enum value
    only the removed code passed (`dropped_enum_values`), its `case E::V:` block, its branch of an
    `if (x == E::V) {...} else if (...)` chain and, once nothing names it, the enumerator itself.
    A use of another form keeps everything of that value, with a note."""
    spans: list[tuple[int, int, str]] = []
    changes: list[Change] = []
    notes: list[Note] = []
    index = LineIndex(text)
    for enum, value in dropped_enum_values(before, text):
        masked = mask_code(text)
        uses = [m for m in _QUALIFIED.finditer(masked) if m.groups() == (enum, value)]
        planned: list[tuple[int, int, str]] = []
        for use in uses:
            span = _case_span(masked, use) or _branch_span(masked, use)
            if span is None:
                planned = []
                notes.append(Note("kept", f"{enum}::{value} is still used here in a form mpsgen does not take apart; "
                                          f"its cases are kept", Location(path, index.line_of(use.start()))))
                break
            planned.append(span)
        if not planned:
            continue
        enumerator = re.search(rf"\benum\s+(?:class\s+)?{enum}\b[^{{]*\{{", masked)
        close = match_brace(masked, enumerator.end() - 1) if enumerator else -1
        item = re.compile(rf"^[ \t]*{value}\b[^,\n}}]*,?[ \t]*(?://[^\n]*)?\n", re.M).search(masked, enumerator.end(), close) if enumerator else None
        if item is not None:
            planned.append((item.start(), item.end(), ""))
        for start, end, new in planned:
            changes.append(Change("remove-case", Location(path, index.line_of(start)), f"{enum}::{value}"))
        spans.extend(planned)
    if not spans:
        return FileChange(path, text, notes=tuple(notes))
    return FileChange(path, replace_spans(text, sorted(spans)), tuple(changes), tuple(notes))


def _line_start(text: str, offset: int) -> int:
    return text.rfind("\n", 0, offset) + 1


def _case_span(masked: str, use: re.Match) -> tuple[int, int, str] | None:
    """`case E::V:` and its statements up to the next label (a label sharing its statements with
    the next one goes alone)."""
    start = _line_start(masked, use.start())
    head = masked[start:use.start()]
    if head.strip() != "case":
        return None
    colon = masked.find(":", use.end())
    if colon < 0 or masked[use.end():colon].strip():
        return None
    nxt = re.compile(r"^[ \t]*(?:case\b|default\s*:)|^[ \t]*\}", re.M).search(masked, colon + 1)
    if nxt is None:
        return None
    body = masked[colon + 1:nxt.start()].strip()
    if body and not re.search(r"\b(?:break|return)\b[^;]*;\s*$", body):
        return None  # falls through into the next case: not its own block
    return (start, nxt.start(), "")


def _branch_span(masked: str, use: re.Match) -> tuple[int, int, str] | None:
    """The branch `if (x == E::V) {...}` of an if/else-if chain (or the whole statement when it is
    alone)."""
    open_paren = masked.rfind("(", 0, use.start())
    if_kw = re.search(r"\bif\s*$", masked[:open_paren])
    if if_kw is None:
        return None
    close_paren = match_brace(masked, open_paren)
    condition = masked[open_paren + 1:close_paren]
    if not re.fullmatch(r"\s*\w+\s*==\s*\w+\s*::\s*\w+\s*|\s*\w+\s*::\s*\w+\s*==\s*\w+\s*", condition):
        return None
    brace = masked.find("{", close_paren)
    if brace < 0 or masked[close_paren + 1:brace].strip():
        return None
    end = match_brace(masked, brace)
    before = masked[:if_kw.start()]
    after = masked[end + 1:]
    else_before = re.search(r"\}\s*else\s*$", before)
    else_after = re.match(r"\s*else\s+if\b", after)
    if else_before:  # `} else if (x == E::V) {...}`: goes from `else` to its closing brace
        return (else_before.start() + 1, end + 1, "")
    if else_after:  # `if (x == E::V) {...} else if (...)`: the next branch becomes the `if`
        return (if_kw.start(), end + 1 + else_after.end() - len("if"), "")
    if re.match(r"\s*else\b", after):
        return None
    start = _line_start(masked, if_kw.start())
    if masked[start:if_kw.start()].strip():
        return None
    line_end = masked.find("\n", end)
    return (start, len(masked) if line_end < 0 else line_end + 1, "")

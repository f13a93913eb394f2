"""`.metal` kernel files: which functors and registrations exist, which REGISTER_* macros the
checkout defines, and the plan that adds a functor and its registrations."""

from __future__ import annotations

from dataclasses import dataclass, replace

from mpsgen.dtypes import METAL_INPUT_TYPES
from mpsgen.errors import MpsgenError
from mpsgen.facts.params import ParamsSpec
from mpsgen.model import Change, FileChange, Location, Note
from mpsgen.read.checkout import C10_METAL_DIR
from mpsgen.read.kernelfile import KernelFile, Registration, read_kernel_file
from mpsgen.textedit import LineIndex, newline_of, replace_spans

# Group macros defined by kernel files (e.g. BinaryKernel.metal): used when present, as upstream does.
BINARY_GROUP_MACROS = {
    "float": "REGISTER_FLOAT_BINARY_OP",
    "int2float": "REGISTER_INT2FLOAT_BINARY_OP",
    "integer": "REGISTER_INTEGER_BINARY_OP",
}


def bfloat_guard(text: str, kernel: KernelFile) -> str | None:
    """The `#if __METAL_VERSION__ >= ...` line when every bfloat registration of the file sits
    under one (older Metal has no bfloat): new bfloat registrations follow that convention."""
    bfloat_offsets = [end for reg, end in kernel.registrations if "bfloat" in reg.args]
    if not bfloat_offsets:
        return None
    guards = set()
    for end in bfloat_offsets:
        before = text[:end]
        opening = before.rfind("#if")
        closing = before.rfind("#endif")
        if opening < 0 or closing > opening:
            return None
        guards.add(before[opening:].split("\n", 1)[0].rstrip("\r"))
    return guards.pop() if len(guards) == 1 else None


def groups_separated_by_blank_lines(text: str, kernel: KernelFile) -> bool:
    """Whether the file leaves a blank line between the registrations of different functors."""
    separated = joined = 0
    previous = None
    for reg, end in kernel.registrations:
        if previous is not None and reg.args[:1] != previous[0].args[:1]:
            between = text[previous[1] : text.rfind("\n", 0, end - 1) + 1]
            lines = [line.strip() for line in between.splitlines()]
            if "" in lines:
                separated += 1
            else:
                joined += 1
        previous = (reg, end)
    return separated > joined


def registrations_for(name: str, arity: int, alpha: bool, groups: tuple[str, ...], macros: frozenset[str], path: str) -> list[Registration]:
    """The REGISTER_* lines that instantiate `name`'s functor for the dtype groups."""
    out: list[Registration] = []
    for group in groups:
        types = METAL_INPUT_TYPES[group]
        if arity == 2 and not alpha and group in BINARY_GROUP_MACROS and BINARY_GROUP_MACROS[group] in macros:
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
            out_type = "float" if group == "int2float" else t
            # alpha kernels: (input, alpha, output); the host passes alpha in the iterator's common
            # dtype, which is float for integer inputs of an op that promotes them to float
            args = (name, t, out_type, out_type) if alpha else (name, t, out_type)
            out.append(Registration(macro, args))
    return out


def plan_kernel(text: str, path: str, functor: str, functor_text: str, registrations: list[Registration],
                registration_macro: str = "", functors: dict | None = None) -> FileChange:
    """Add `functor_text` after the file's last functor (a backward functor after its forward one)
    and the registrations after its last registration line (the file keeps one registration block),
    skipping what is already there. `registration_macro`: a `#define` the new registration lines
    use, written just before them. `functors`: every functor's span as the compiler sees the file
    (`facts.KernelView.functors`: those written by a macro are at their call), else the literal ones."""
    kernel = read_kernel_file(text, path)
    if functors is not None:
        kernel = replace(kernel, functors={**functors, **kernel.functors})
    newline = newline_of(text)
    index = LineIndex(text)
    spans = []
    changes: list[Change] = []
    notes: list[Note] = []
    functor_end = None
    if functor in kernel.functors:
        start, _ = kernel.functors[functor]
        notes.append(Note("kept", f"struct {functor}_functor already exists; kept as is", Location(path, index.line_of(start))))
    else:
        forward = functor.removesuffix("_backward")
        if forward != functor and forward in kernel.functors:
            anchor = kernel.functors[forward][1]  # a backward functor follows its forward one
        elif kernel.functors:
            anchor = max(end for _, end in kernel.functors.values())
        elif kernel.registrations:
            anchor = index.start_of(index.line_of(min(off for _, off in kernel.registrations) - 1))
        else:
            anchor = len(text)
        body = functor_text.replace("\n", newline) if newline != "\n" else functor_text
        prefix = newline if anchor > 0 and not text[:anchor].endswith(newline * 2) else ""
        suffix = newline if anchor < len(text) and text[anchor:anchor + len(newline)] != newline else ""
        spans.append((anchor, anchor, prefix + body + suffix))
        functor_end = anchor
        changes.append(Change("functor", Location(path, index.line_of(anchor) + (1 if prefix else 0)), f"struct {functor}_functor"))
    missing = [reg for reg in registrations if not kernel.has_registration(reg)]
    if missing:
        guard = bfloat_guard(text, kernel)
        plain = [reg for reg in missing if not (guard and "bfloat" in reg.args)]
        guarded = [reg for reg in missing if guard and "bfloat" in reg.args]
        lines = "".join(reg.render() + newline for reg in plain)
        if guarded:
            lines += guard + newline + "".join(reg.render() + newline for reg in guarded) + "#endif" + newline
        if registration_macro:
            lines = registration_macro.replace("\n", newline) + lines
        if kernel.registrations:
            anchor = max(off for _, off in kernel.registrations)
            # the #endif closing a guarded group belongs to the block
            rest = text[anchor:]
            if rest.startswith("#endif"):
                anchor += len(rest.split(newline, 1)[0]) + len(newline)
            if groups_separated_by_blank_lines(text, kernel):
                lines = newline + lines
            spans.append((anchor, anchor, lines))
            line = index.line_of(anchor) if anchor < len(text) else index.line_count + 1
        else:
            anchor = functor_end if functor_end is not None else len(text)
            spans.append((anchor, anchor, newline + lines))
            line = index.line_of(anchor)
        changes.extend(Change("register", Location(path, line), reg.render()) for reg in missing)
    new_text = replace_spans(text, [_at_unterminated_end(text, span, newline) for span in spans]) if spans else text
    return FileChange(path, new_text, tuple(changes), tuple(notes))


def _at_unterminated_end(text: str, span: tuple[int, int, str], newline: str) -> tuple[int, int, str]:
    """Text added after a last line that has no line ending starts on a line of its own, and the file
    still ends without one (never glue code onto the user's last line)."""
    start, end, new = span
    if start == len(text) and new and text and not text.endswith(("\n", "\r")):
        return start, end, newline + new.removesuffix(newline)
    return span


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

"""`.metal` kernel files: which functors and registrations exist, which REGISTER_* macros the
checkout defines, and the plan that adds a functor and its registrations."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, replace

from mpsgen.dtypes import METAL_INPUT_TYPES
from mpsgen.model import Change, FileChange, Location, Note
from mpsgen.read.cpp import conditions_by_line, mask_code
from mpsgen.read.kernelfile import KernelFile, Registration, read_kernel_file
from mpsgen.read.metalread import KernelReading
from mpsgen.textedit import LineIndex, newline_of, replace_spans

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


def plan_kernel(text: str, path: str, functor: str, functor_text: str, registrations: list[Registration],
                registration_macro: str = "", functors: dict[str, tuple[int, int]] | None = None,
                reading: KernelReading | None = None, reports: bool = True) -> FileChange:
    """Add `functor_text` after the file's last functor (a backward functor after its forward one)
    and the registrations after its last registration line (the file keeps one registration block),
    skipping what is already there. `registration_macro`: a `#define` the new registration lines
    use, written just before them. `functors`: every functor's span as the compiler sees the file
    (`facts.KernelView.functors`: those written by a macro are at their call), else the literal ones.
    Registrations join the file's own list macros where they fit (`join_list_macros`; `reading`,
    the compiler's reading of `text`, says which calls under a Metal version condition count).
    `reports=False`: the new text only, without the lines each added entry stands on (a plan made
    to learn whether it refuses: finding them refuses nothing)."""
    kernel = read_kernel_file(text, path)
    if functors is not None:
        kernel = replace(kernel, functors={**functors, **kernel.functors})
    newline = newline_of(text)
    index = LineIndex(text)
    spans = []
    changes: list[Change] = []
    notes: list[Note] = []
    # Where the registrations go, decided first: the functor must be defined above every line that
    # names it (a list macro's calls, a family block of registration lines).
    missing = [reg for reg in registrations if not kernel.has_registration(reg)]
    macro_spans, macros, missing = join_list_macros(text, functor, missing, reading)
    blocks = _family_blocks(text, kernel, missing, newline, functor) if missing else []
    uses = [index.start_of(min(macro.first_line, *(line for _, line in macro.invocations))) for macro in macros]
    uses += [anchor for anchor, _ in blocks if anchor is not None]
    first_use = min(uses, default=None)
    functor_end = None
    if functor in kernel.functors:
        start, _ = kernel.functors[functor]
        notes.append(Note("kept", f"struct {functor}_functor already exists; kept as is", Location(path, index.line_of(start))))
    else:
        anchor = _functor_anchor(text, kernel, functor, index, first_use)
        body = functor_text.replace("\n", newline) if newline != "\n" else functor_text
        prefix = newline if anchor > 0 and not text[:anchor].endswith(newline * 2) else ""
        suffix = newline if anchor < len(text) and text[anchor:anchor + len(newline)] != newline else ""
        spans.append((anchor, anchor, prefix + body + suffix))
        functor_end = anchor
        # the struct's own line (shared helpers the functor brings stand before it)
        head = body.find(f"struct {functor}_functor")
        lines_before = body.count(newline, 0, head) if head > 0 else 0
        changes.append(Change("functor", Location(path, index.line_of(anchor) + (1 if prefix else 0) + lines_before),
                              f"struct {functor}_functor"))
    spans.extend(macro_spans)
    placed: list[Registration] = []
    if missing:
        guard = bfloat_guard(text, kernel)
        separated = groups_separated_by_blank_lines(text, kernel)
        first = True
        for anchor, block in blocks:
            plain = [reg for reg in block if not (guard and "bfloat" in reg.args)]
            guarded = [reg for reg in block if guard and "bfloat" in reg.args]
            lines = "".join(reg.render() + newline for reg in plain)
            if guarded:
                lines += guard + newline + "".join(reg.render() + newline for reg in guarded) + "#endif" + newline
            if registration_macro and first:
                lines = registration_macro.replace("\n", newline) + lines
            if anchor is not None:
                if separated:
                    lines = newline + lines
                    if anchor < len(text) and not text.startswith(newline, anchor):
                        lines += newline  # the line after belongs to another group: a blank line between
                spans.append((anchor, anchor, lines))
            else:
                anchor = functor_end if functor_end is not None else len(text)
                spans.append((anchor, anchor, newline + lines))
            placed.extend(block)
            first = False
    new_text = replace_spans(text, [_at_unterminated_end(text, span, newline) for span in spans]) if spans else text
    if not reports:
        return FileChange(path, new_text, (), ())
    if placed:  # each at its line in the new text
        changes.extend(Change("register", Location(path, _line_of_registration(new_text, reg)), reg.render())
                       for reg in placed)
    if macros:
        changes.extend(_list_macro_changes(new_text, path, functor, macros))
    return FileChange(path, new_text, tuple(changes), tuple(notes))


def _functor_anchor(text: str, kernel: KernelFile, functor: str, index: LineIndex, first_use: int | None) -> int:
    """Where a new functor goes: after the file's last functor (a backward functor after its forward
    one), but above `first_use`, the first line that will name it: then after the last functor that
    ends above that line, else at the start of the paragraph (the run of non-blank lines, comments
    included) holding it."""
    forward = functor.removesuffix("_backward")
    ends = [end for _, end in kernel.functors.values() if first_use is None or end <= first_use]
    if forward != functor and forward in kernel.functors and kernel.functors[forward][1] in ends:
        return kernel.functors[forward][1]  # a backward functor follows its forward one
    if ends:
        return max(ends)
    if first_use is not None:
        line = index.line_of(first_use)
        lines = text.split("\n")
        while line > 1 and lines[line - 2].strip():
            line -= 1
        return index.start_of(line)
    if kernel.registrations:
        return index.start_of(index.line_of(min(off for _, off in kernel.registrations) - 1))
    return len(text)


COMPLEX_METAL_TYPES = frozenset(METAL_INPUT_TYPES["complex"])


def _family(reg: Registration) -> tuple[str, bool]:
    """A registration's family: its macro, and whether it registers a complex type."""
    return reg.macro, bool(COMPLEX_METAL_TYPES & set(reg.args))


def _family_blocks(text: str, kernel: KernelFile, regs: list[Registration], newline: str, functor: str
                   ) -> list[tuple[int | None, list[Registration]]]:
    """Where the new registrations go, beside their family: the real ones and the complex ones, each
    kind in one block, after the last run of the file's registrations (one functor's consecutive
    lines) holding one of the block's first macro and kind, else of its kind, else after the file's
    last registration (None: the file has none); never inside a conditional group (after its
    `#endif`). Registrations naming a type of the file's own (a params
    struct the op's macro typedefs) stay in one block, after their macro's calls."""
    if not kernel.registrations:
        return [(None, list(regs))]
    conditional = conditions_by_line(text)
    index = LineIndex(text)
    runs: list[tuple[set, int]] = []  # (families, end offset)
    previous = None
    for reg, end in kernel.registrations:
        name = reg.args[0] if reg.args else reg.macro
        if runs and previous == name:
            runs[-1] = (runs[-1][0] | {_family(reg)}, end)
        else:
            runs.append(({_family(reg)}, end))
        previous = name

    def after(end: int) -> int:
        """Past the `#endif` of the conditional block the line ending at `end` sits in (or that
        follows it at once), so that nothing joins a guarded group."""
        line = index.line_of(max(end - 1, 0))
        if text.startswith("#endif", end):
            line += 1
        while line < len(conditional) and conditional[line - 1]:
            line += 1
        return index.end_of(line) if line > index.line_of(max(end - 1, 0)) else end

    last = after(max(end for _, end in kernel.registrations))
    metal_types = {t for types in METAL_INPUT_TYPES.values() for t in types}
    own_types = any(arg not in metal_types for reg in regs for arg in reg.args[1:])
    kinds: dict[bool, list[Registration]] = {}
    for reg in regs:
        kinds.setdefault(False if own_types else _family(reg)[1], []).append(reg)
    blocks: dict[int, list[Registration]] = {}
    for is_complex, block in kinds.items():
        family = _family(block[0])
        same = [end for families, end in runs if family in families]
        kind = [end for families, end in runs if any(f[1] == family[1] for f in families)]
        anchor = after(same[-1]) if same else after(kind[-1]) if kind else last
        blocks.setdefault(anchor, []).extend(block)
    return list(blocks.items())


def _line_of_registration(text: str, reg: Registration) -> int:
    """The 1-based line of `text` where `reg` is written."""
    at = re.search(rf"^[ \t]*{re.escape(reg.macro)}\s*\(\s*" + r"\s*,\s*".join(map(re.escape, reg.args)) + r"\s*\)",
                   text, re.M)
    return text.count("\n", 0, at.start()) + 1 if at else 1


def _list_macro_changes(new_text: str, path: str, functor: str, used: list[ListMacro]) -> list[Change]:
    """One `register` change per list macro that took `functor`, at its entry's line of `new_text`."""
    lines = new_text.split("\n")
    by_name = {m.name: m for m in find_list_macros(new_text)}
    out = []
    for macro in used:
        after = by_name.get(macro.name)
        line = macro.first_line
        if after is not None:
            entry = re.compile(rf"^\s*{re.escape(macro.register)}\s*\(\s*{re.escape(functor)}\s*,")
            line = next((k for k in range(after.first_line, after.last_line + 1) if entry.match(lines[k - 1])), line)
        written = lines[line - 1].strip().rstrip("\\").strip().rstrip(";")
        pairs = len(macro.registered_args())
        out.append(Change("register", Location(path, line),
                          f"{written} registers {functor} through {macro.name} ({pairs} dtype pairs)"))
    return out


def _at_unterminated_end(text: str, span: tuple[int, int, str], newline: str) -> tuple[int, int, str]:
    """Text added after a last line that has no line ending starts on a line of its own, and the file
    still ends without one (never glue code onto the user's last line)."""
    start, end, new = span
    if start == len(text) and new and text and not text.endswith(("\n", "\r")):
        return start, end, newline + new.removesuffix(newline)
    return span


# ------------------------------------------------------------------ list macros (the file's idiom)

_LIST_DEFINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+(\w+)\(([^()]*)\)[ \t]*\\$")
_LIST_ENTRY = re.compile(r"^(REGISTER_\w+)[ \t]*\([ \t]*(\w+)[ \t]*,([^()]*)\)[ \t]*(;?)$")
# a condition on the Metal version only: the compiler's reading (`metalread`, Metal 3.1) says
# whether the calls under it count
_VERSION_CONDITION = re.compile(r"^#if __METAL_VERSION__ (?:>=|>|<|<=|==) \d+$")


@dataclass(frozen=True)
class ListMacro:
    """A kernel file's own `#define NAME(DTYPE...)` whose body is a list of registrations of one
    REGISTER_* macro, one op a line, each with the same dtype arguments made of the parameters
    (`INSTANTIATE_MATH_UNARY_KERNELS(DTYPEI, DTYPEO)`, `REGISTER_COMPLEX_SIGN_KERNELS(COMPONENT)`
    with `COMPONENT##2`), and the calls of it in the file."""

    name: str
    params: tuple[str, ...]
    register: str  # the REGISTER_* macro of every entry
    dtype_args: tuple[str, ...]  # the entries' arguments after the op, as written (normalised)
    ops: tuple[str, ...]  # the entries' ops, in order
    first_line: int  # 1-based line of the #define
    last_line: int  # 1-based last line of its body
    invocations: tuple[tuple[tuple[str, ...], int], ...]  # (arguments, line)
    declined: str = ""  # why the file's registrations must not go through it ("" when they may)
    # calls under `#if __METAL_VERSION__ ...` only: usable when the compiler's reading sees each
    # (`usable`); an op joining the list is then registered under the same conditions
    version_calls: tuple[int, ...] = ()

    def usable(self, reading: KernelReading | None = None) -> str:
        """Why the list cannot take a new op ("" when it can): `declined`, or a call under a Metal
        version condition that the compiler (`reading`: `metalread.KernelReading`) does not take
        or that nothing read."""
        if self.declined or not self.version_calls:
            return self.declined
        if reading is None:
            return f"called under #if at line {self.version_calls[0]}"
        seen = {r.line for r in reading.registrations}
        unseen = [line for line in self.version_calls if line not in seen]
        return f"called under #if at line {unseen[0]}, which Metal 3.1 does not compile" if unseen else ""

    def registered_args(self) -> frozenset[tuple[str, ...]]:
        """The registration arguments after the op that the calls produce (the compiler's expansion
        of the entries' dtype arguments, `##` pasting included)."""
        out = set()
        for values, _line in self.invocations:
            bound = dict(zip(self.params, values))
            out.add(tuple("".join(bound.get(p.strip(), p.strip()) for p in arg.split("##")) for arg in self.dtype_args))
        return frozenset(out)


def find_list_macros(text: str) -> list[ListMacro]:
    """The list macros of a kernel file (see `ListMacro`); `declined` is set for one whose
    definition or any call sits under `#if` (the set of dtypes it registers then depends on the
    build), one used anywhere but plain top-level calls, or one defined twice. The last texts'
    are kept in process (scan plans several candidates against one kernel file)."""
    return list(_list_macros(text))


@functools.lru_cache(maxsize=16)
def _list_macros(text: str) -> tuple[ListMacro, ...]:
    masked = mask_code(text)
    lines = masked.split("\n")
    conditional = conditions_by_line(text, masked)
    found: list[ListMacro] = []
    i = 0
    while i < len(lines):
        head = _LIST_DEFINE.match(lines[i].rstrip("\r"))
        if head is None:
            i += 1
            continue
        end = i + 1
        while end < len(lines) - 1 and lines[end].rstrip("\r").rstrip().endswith("\\"):
            end += 1
        macro = _list_macro(head.group(1), head.group(2), lines[i + 1 : end + 1], i + 1)
        if macro is not None:
            found.append(_with_calls(macro, masked, lines, conditional))
        i = end + 1
    twice = {m.name for m in found if len(re.findall(rf"^[ \t]*#[ \t]*define[ \t]+{re.escape(m.name)}\b", masked, re.M)) > 1}
    return tuple(replace(m, declined="defined more than once") if m.name in twice else m for m in found)


def _list_macro(name: str, param_text: str, body: list[str], first_line: int) -> ListMacro | None:
    params = tuple(p.strip() for p in param_text.split(","))
    if not body or not body[-1].strip() or not all(re.fullmatch(r"\w+", p) for p in params):
        return None
    entries = []
    for k, line in enumerate(body):
        content = line.rstrip("\r").rstrip()
        content = content.removesuffix("\\").strip() if k < len(body) - 1 else content.strip()
        if not content:
            continue
        entry = _LIST_ENTRY.match(content)
        if entry is None:
            return None
        args = tuple(_normalise_arg(a) for a in entry.group(3).split(","))
        entries.append((entry.group(1), entry.group(2), args, entry.group(4)))
    if len(entries) < 2:
        return None
    registers = {e[0] for e in entries}
    dtype_args = {e[2] for e in entries}
    if len(registers) != 1 or len(dtype_args) != 1 or any(e[1] in params for e in entries):
        return None
    args = dtype_args.pop()
    if not any(piece.strip() in params for arg in args for piece in arg.split("##")):
        return None  # registers fixed dtypes: not a per-dtype list
    return ListMacro(name, params, registers.pop(), args, tuple(e[1] for e in entries),
                     first_line, first_line + len(body), ())


def _normalise_arg(arg: str) -> str:
    return "##".join(piece.strip() for piece in arg.split("##"))


def _with_calls(macro: ListMacro, masked: str, lines: list[str], conditional: list[tuple[str, ...]]) -> ListMacro:
    call = re.compile(rf"^{re.escape(macro.name)}[ \t]*\(([^()]*)\)[ \t]*;?[ \t]*$")
    calls = []
    version_calls = []
    declined = "defined under #if" if conditional[macro.first_line - 1] else ""
    for k, line in enumerate(lines):
        m = call.match(line.rstrip("\r"))
        if m is None:
            continue
        values = tuple(v.strip() for v in m.group(1).split(","))
        if len(values) != len(macro.params) or not all(re.fullmatch(r"\w+", v) for v in values):
            declined = declined or f"called with other arguments at line {k + 1}"
            continue
        if conditional[k] and all(_VERSION_CONDITION.match(c) for c in conditional[k]):
            version_calls.append(k + 1)
        elif conditional[k] and not declined:
            declined = f"called under {conditional[k][-1].split(' ', 1)[0]} at line {k + 1}"
        calls.append((values, k + 1))
    uses = len(re.findall(rf"\b{re.escape(macro.name)}\b", masked))
    if uses != 1 + len(calls) and not declined:
        declined = "used other than by top-level calls"
    if not calls and not declined:
        declined = "never called"
    return replace(macro, invocations=tuple(calls), declined=declined, version_calls=tuple(version_calls))


def _entry_line(block_line: str, op: str, new_op: str) -> str:
    """An entry written like `block_line` (a neighbour's content, without its backslash) for `new_op`."""
    return re.sub(rf"(\(\s*){re.escape(op)}(\s*,)", lambda m: m.group(1) + new_op + m.group(2), block_line, count=1)


def add_to_list_macro(text: str, macro: ListMacro, op: str) -> tuple[int, int, str]:
    """The span that rewrites `macro`'s definition with an entry for `op`: in the list's order
    when its ops are sorted, else last; written like its neighbours (indentation, spacing, the
    last entry without `;` when the file writes it so); the continuation backslashes aligned as
    clang-format aligns them (one space after the longest line but the last) when the block is
    aligned so, else the other lines left as they are."""
    index = LineIndex(text)
    newline = newline_of(text)
    start, end = index.start_of(macro.first_line), index.end_of(macro.last_line)
    raw = text[start:end].split("\n")
    if raw and raw[-1] == "":
        raw.pop()
    raw = [line.rstrip("\r") for line in raw]
    ends_with_newline = text[start:end].endswith("\n")
    contents = [line.rstrip().removesuffix("\\").rstrip() if k < len(raw) - 1 else line.rstrip()
                for k, line in enumerate(raw)]
    entries = [k for k in range(1, len(contents)) if contents[k].strip()]
    ops = list(macro.ops)
    last = entries[-1]
    ordered = len(ops) >= 3 and ops == sorted(ops)  # two ops in order say little
    position = next((i for i, existing in enumerate(ops) if existing > op), len(ops)) if ordered else len(ops)
    template = contents[entries[min(position, len(entries) - 1)]]
    new_entry = _entry_line(template, ops[min(position, len(ops) - 1)], op).rstrip(";").rstrip()
    new_contents = list(contents)
    if position < len(ops):
        new_contents.insert(entries[position], new_entry + ";")
        inserted = entries[position]
    else:
        closes = contents[last].endswith(";")
        if not closes:
            new_contents[last] = contents[last] + ";"
        new_contents.insert(last + 1, new_entry + (";" if closes else ""))
        inserted = last + 1
    widths = [len(c) for c in contents[:-1]]
    aligned = bool(widths) and all(line.rstrip().rfind("\\") == max(widths) + 1 for line in raw[:-1])
    if aligned:
        width = max(len(c) for c in new_contents[:-1])
        out = [c.ljust(width) + " \\" for c in new_contents[:-1]] + [new_contents[-1]]
    else:
        # the other lines as they are; a new or changed line continued at its neighbour's column
        column = [line.rstrip().rfind("\\") for k, line in enumerate(raw[:-1]) if k in entries][-1]
        out = []
        for k, content in enumerate(new_contents):
            old = k if k < inserted else k - 1
            if k == len(new_contents) - 1 and k == inserted:
                out.append(content)
            elif k == inserted or (old == last and inserted > last):
                out.append(content.ljust(column) + "\\" if column > len(content) else content + " \\")
            else:
                out.append(raw[old])
    block = newline.join(out) + (newline if ends_with_newline else "")
    return start, end, block


def join_list_macros(text: str, functor: str, registrations: list[Registration],
                     reading: KernelReading | None = None,
                     ) -> tuple[list[tuple[int, int, str]], list[ListMacro], list[Registration]]:
    """Which of `registrations` go through the file's list macros: a macro takes `functor` when
    what its calls register is exactly the union of some of the op's dtype groups (`Registration.
    group`), none of them already taken. Returns the spans that add the entries, the macros used,
    and the registrations left to write one per line (those a macro listing `functor` already
    makes are dropped: a second run adds nothing)."""
    remaining = list(registrations)
    spans = []
    used: list[ListMacro] = []
    for macro in find_list_macros(text):
        if macro.usable(reading):
            continue
        target = macro.registered_args()
        def made_by_macro(reg: Registration) -> bool:
            return reg.macro == macro.register and reg.args[0] == functor and tuple(reg.args[1:]) in target
        if functor in macro.ops:
            remaining = [reg for reg in remaining if not made_by_macro(reg)]
            continue
        groups: dict[str, list[Registration]] = {}
        for reg in remaining:
            groups.setdefault(reg.group or reg.key, []).append(reg)
        fitting = [regs for regs in groups.values() if all(made_by_macro(reg) for reg in regs)]
        covered = {tuple(reg.args[1:]) for regs in fitting for reg in regs}
        if not fitting or covered != target:
            continue
        spans.append(add_to_list_macro(text, macro, functor))
        used.append(macro)
        taken = {reg.key for regs in fitting for reg in regs}
        remaining = [reg for reg in remaining if reg.key not in taken]
    return spans, used, remaining

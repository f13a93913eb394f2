"""What an op's CPU implementation makes of integer inputs, read from the checkout's
`aten/src/ATen/native/*.cpp` (the files that build each op's TensorIterator).

A structured op's meta function (`TORCH_META_FUNC(op)`, `TORCH_META_FUNC2(op, overload)`, written
literally or by a file macro whose body is one, then called per op) builds its iterator with a
`build_*_float_op` helper (integer inputs give a float output) or a plain `build_*_op` one (the
output keeps the input dtype). A non-structured op's CPU kernel (the function its `CPU:` dispatch
line names) builds it with `TensorIterator::unary_float_op` / `binary_float_op` / `unary_op` /
`binary_op` (or `borrowing_*`), directly or through a helper defined in the same file.

`read_cpu_file(text, path) -> CpuFile` (meta functions, functions and what they build, the helpers
they call); `mpsgen.facts.views.cpu_output(views, op, entries) -> CpuOutput`: `int2float`, `same`,
or `unknown` with the reason
(no .cpp in the checkout: a wheel ships none; no definition found; a body that builds both ways or
neither). Files are read through the Workspace and parsed once per text (`Views.view`), and only
the files naming one of the op's definitions are parsed."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from mpsgen.errors import MpsgenError
from mpsgen.model import Location
from mpsgen.read.cpp import find_definitions, mask_code
from mpsgen.textedit import LineIndex

INT2FLOAT = "int2float"
SAME = "same"
BOOL = "bool"  # a `_force_boolean_` builder: the output is bool whatever the input
UNKNOWN = "unknown"

# the iterator builders and what they make of integer inputs
_BUILDER = re.compile(
    r"\b(?:build_(?:borrowing_)?(?:unary|binary)(?:(?P<f1>_float)|(?P<b1>_force_boolean))?_op"
    r"|TensorIterator\s*::\s*(?:borrowing_)?(?:unary|binary)(?:(?P<f2>_float)|(?P<b2>_force_boolean))?_op)\s*\("
    r"|\bpromote_integer_inputs_to_float\s*\(\s*true\s*\)"
)
_META_HEAD = re.compile(r"\bTORCH_META_FUNC(2?)\s*\(\s*(\w+)\s*(?:,\s*(\w+)\s*)?\)")
_CALL = re.compile(r"\b([A-Za-z_]\w*)\s*(?:<[^;{}()]*>)?\s*\(")
# a dispatch stub called for a device: `mse_stub(iter.device_type(), iter)`, `GeluKernel(kCPU, *this, ...)`
_STUB_CALL = re.compile(r"(?<![\w.:>])([A-Za-z_]\w*)\s*\(\s*(?:[\w.>-]*?\bdevice_type\s*\(\s*\)|(?:c10::|at::)?"
                        r"(?:DeviceType::|kCPU|kCUDA|kMPS|kXPU)\w*)")
# an ATen op called through the at:: namespace: `at::mean_out(`, `at::clamp_min(`
_OP_CALL = re.compile(r"\bat::(?:native::)?([a-z_]\w*)\s*\(")
# a whole-tensor reduction called as a Tensor method (ATen's Loss.cpp helper apply_loss_reduction:
# `unreduced.mean()`, `unreduced.sum()`)
_REDUCING_METHOD = re.compile(r"\.\s*(mean|sum)\s*\(\s*\)")


@dataclass(frozen=True)
class CpuOutput:
    """What the CPU implementation gives for integer inputs: `kind` (`int2float`, `same`,
    `unknown`), where it says so (`location`, None when unknown) and why it is unknown."""

    kind: str
    location: Location | None = None
    why: str = ""


@dataclass(frozen=True)
class Use:
    """What a function body calls that another kernel serves: a dispatch stub called for a device
    (`kind` "stub"), an ATen op called as `at::name(` ("op") or a whole-tensor reduction called as a
    Tensor method, `t.mean()` ("method"), at its line."""

    kind: str
    name: str
    line: int


@dataclass(frozen=True)
class CpuFile:
    """One .cpp file's meta functions ((name, overload) -> (kind, line)) and functions
    (name -> [(kind, line)], `kind` as read from the body alone, "" when it builds no iterator;
    `calls`: the functions of the file each one calls; `uses`: name -> the stubs and ops its body
    calls (`Use`), `TORCH_IMPL_FUNC` bodies included)."""

    metas: dict
    functions: dict
    calls: dict
    uses: dict = field(default_factory=dict)

    def uses_of(self, name: str) -> tuple[Use, ...]:
        """The stubs and ops `name` calls, directly or through the functions of this file it calls
        (each helper once)."""
        seen, out, todo = set(), [], [name]
        while todo:
            current = todo.pop(0)
            if current in seen:
                continue
            seen.add(current)
            out.extend(self.uses.get(current, ()))
            todo.extend(sorted(h for h in self.calls.get(current, ()) if h in self.functions or h in self.uses))
        return tuple(out)


def body_kind(masked_body: str) -> str:
    """`int2float`, `same`, `bool` (`build_borrowing_unary_force_boolean_op`: signbit), `unknown`
    (several), or "" (no iterator built) for a masked body."""
    kinds = set()
    for m in _BUILDER.finditer(masked_body):
        if m.group("b1") or m.group("b2"):
            kinds.add(BOOL)
        else:
            kinds.add(INT2FLOAT if (m.group("f1") or m.group("f2") or "promote_integer" in m.group(0)) else SAME)
    if len(kinds) > 1:
        return UNKNOWN
    return kinds.pop() if kinds else ""


def read_cpu_file(text: str, path: str) -> CpuFile:
    masked = mask_code(text)
    index = LineIndex(text)
    try:
        definitions = find_definitions(text, path)
    except MpsgenError:
        return CpuFile({}, {}, {})  # a file mpsgen cannot delimit says nothing about any op
    macro_kinds: dict[str, str] = {}
    metas: dict = {}
    functions: dict = {}
    calls: dict = {}
    uses: dict = {}
    for d in definitions:
        code = masked[d.code_start:d.code_end]
        line = index.line_of(d.code_start)
        if d.kind in ("function", "impl-func"):
            brace = code.find("{")
            if brace >= 0 and not _META_HEAD.match(code.lstrip()):
                found = [Use("stub", m.group(1), index.line_of(d.code_start + m.start(1)))
                         for m in _STUB_CALL.finditer(code, brace)]
                found += [Use("op", m.group(1), index.line_of(d.code_start + m.start(1)))
                          for m in _OP_CALL.finditer(code, brace)]
                found += [Use("method", m.group(1), index.line_of(d.code_start + m.start(1)))
                          for m in _REDUCING_METHOD.finditer(code, brace)]
                found.sort(key=lambda u: u.line)
                uses.setdefault(d.name, []).extend(found)
                calls.setdefault(d.name, set()).update(m.group(1) for m in _CALL.finditer(code[brace:]))
        if d.kind == "macro":
            head = _META_HEAD.search(code)
            params = re.match(r"\s*#\s*define\s+\w+\s*\(([^)]*)\)", code)
            if head and params and head.group(2) in [p.strip() for p in params.group(1).split(",")]:
                macro_kinds[d.name] = body_kind(code)
        elif d.kind == "macro-instance" and d.name in macro_kinds and d.args:
            metas[(d.args[0], "")] = (macro_kinds[d.name], line)
        elif d.kind == "function":
            head = _META_HEAD.match(code.lstrip())
            if head:
                metas[(head.group(2), head.group(3) or "")] = (body_kind(code), line)
                continue
            brace = code.find("{")
            body = code[brace:] if brace >= 0 else ""
            functions.setdefault(d.name, []).append((body_kind(body), line))
            calls.setdefault(d.name, set()).update(m.group(1) for m in _CALL.finditer(body))
    return CpuFile(metas, functions, {k: frozenset(v) for k, v in calls.items()},
                   {k: tuple(v) for k, v in uses.items()})


def function_kind(cpu: CpuFile, name: str) -> str:
    """The kind of a function of the file: its own body, else (one level) the helpers it calls."""
    kinds = {kind for kind, _ in cpu.functions.get(name, ())}
    if kinds - {""}:
        kinds.discard("")
    if kinds == {""}:
        kinds = {kind for helper in cpu.calls.get(name, ()) if helper != name
                 for kind, _ in cpu.functions.get(helper, ()) if kind}
    if len(kinds) == 1:
        return kinds.pop()
    return UNKNOWN if kinds else ""

"""Per-device functions around one stub (issue 36 item 3): CPU and CUDA dispatch to functions of
their own (`CPU: gelu_out_cpu`, `CUDA: gelu_out_cuda`) that each call one stub for their device
(`GeluKernel(kCPU, *this, get_gelutype_enum(approximate))`), and MPS to a function of its own
(`MPS: gelu_out_mps`) building an MPSGraph. The MPS function stays in the yaml; its body becomes
the stub call for kMPS, as the CPU function makes it:

- a structured op (`TORCH_IMPL_FUNC`, the iterator is `*this`, built by the meta function all
  devices share): `<stub>(kMPS, *this, <what the CPU function passes>)`, each argument as the CPU
  function's call computes it from its parameters (`mpsgen.read.stubcall`, locals substituted),
  renamed to the MPS function's parameters; without a .cpp (a wheel), from the stub's declared
  parameters and the schema's arguments (an enum made from a string through the header's helper,
  `get_gelutype_enum(approximate)`);
- a non-structured op (`log_sigmoid_backward_cpu_out`: the function builds its own iterator): the
  CPU function's body with `kCPU` made `kMPS` and its parameters renamed to the MPS function's,
  when the body has no preprocessor conditional (an `#if AT_MKLDNN_ENABLED()` branch is the CPU's
  own); otherwise, and without a .cpp, a refusal naming what is missing.

`per_device_sites` finds the shape, `per_device_of` builds the bodies (or refuses), and
`mps_function_state` tells `verify` whether an MPS function is the stub call or still a graph."""

from __future__ import annotations

import re
from dataclasses import dataclass

from mpsgen.errors import MpsgenError
from mpsgen.facts.params import EnumType, _enum_name
from mpsgen.facts.recorded import RecordedIterator, recorded_iterator
from mpsgen.facts.views import DispatchSite, Views, is_legacy_line, is_shared_line, resolve_stub
from mpsgen.model import Location
from mpsgen.read.checkout import NATIVE_DIR
from mpsgen.read.cpp import find_definitions, find_directives, mask_code, match_brace
from mpsgen.read.stubcall import function_parts, read_stub_call
from mpsgen.read.stubs import Stub
from mpsgen.textedit import LineIndex

# MPSGraph construction in a host function's body (as `facts.rules.MPSGRAPH` marks graph sites)
_GRAPH = re.compile(r"\b(?:MPSGraph\w*|LookUpOrCreateCachedGraph|runMPSGraph|mpsGraph)\b")


@dataclass(frozen=True)
class MpsBody:
    """What one MPS function's body becomes."""

    kernel: str  # the MPS line's function (gelu_out_mps): it stays in the yaml
    location: Location  # its definition
    text: str  # the statements, each line ending in a newline
    how: str  # where the call was read (path:line)
    inputs: int = 0  # the iterator's inputs a copied body builds (0: the structured iterator, the schema's)


@dataclass(frozen=True)
class PerDevice:
    sites: tuple[tuple[DispatchSite, DispatchSite], ...]  # (CPU line, MPS line) of each entry
    bodies: tuple[MpsBody, ...]

    @property
    def mps_sites(self) -> tuple[DispatchSite, ...]:
        return tuple(mps for _, mps in self.sites)

    @property
    def carrier(self):
        return self.sites[0][1].entry


def per_device_sites(entries) -> tuple[tuple[DispatchSite, DispatchSite], ...]:
    """The entries whose CPU and CUDA lines name different functions and whose MPS line names a
    function of its own: (the CPU line, the MPS line) of each."""
    out = []
    for entry in entries:
        cpu = next((ln for ln in entry.dispatch if "CPU" in ln.keys and "CUDA" not in ln.keys), None)
        cuda = next((ln for ln in entry.dispatch if "CUDA" in ln.keys and "CPU" not in ln.keys), None)
        mps = next((ln for ln in entry.dispatch if is_legacy_line(ln)), None)
        if cpu is not None and cuda is not None and mps is not None and cpu.kernel != cuda.kernel:
            out.append((DispatchSite(entry, cpu), DispatchSite(entry, mps)))
    return tuple(out)


def _definition(views: Views, files, name: str):
    """(path, text, definition) of the function or TORCH_IMPL_FUNC `name` in `files`, or None."""
    for rel in files:
        text = views.ws.read(rel)
        if name not in text:
            continue
        try:
            definitions = find_definitions(text, rel)
        except MpsgenError:
            continue
        for d in definitions:
            if d.name == name and d.kind in ("function", "impl-func"):
                return rel, text, d
    return None


def mps_definition(views: Views, kernel: str):
    return _definition(views, views.host_files(), kernel)


def per_device_of(views: Views, op: str, entries, stub: Stub, enums: dict[str, EnumType]) -> PerDevice | None:
    """The per-device shape of the op with the body each MPS function gets (None when the op is
    not in that shape); raises MpsgenError (a refusal) when a body cannot be written with certainty."""
    sites = per_device_sites(entries)
    if not sites:
        return None
    cpp = views.checkout.glob(NATIVE_DIR, "*.cpp")
    bodies = []
    for cpu, mps in sites:
        found = mps_definition(views, mps.line.kernel)
        if found is None:
            raise MpsgenError(f"{op}'s MPS function {mps.line.kernel} (`MPS:` at {mps.line.location}) is not defined "
                              f"in any operations/*.mm file", location=mps.line.location,
                              hint="check the `MPS:` line, or define the function")
        rel, text, d = found
        parts = function_parts(text, d)
        if parts is None:
            raise MpsgenError(f"{mps.line.kernel}'s body cannot be delimited", location=d.location,
                              hint="port it by hand")
        parameters = parts[0]
        where = Location(rel, LineIndex(text).line_of(d.code_start))
        inputs = 0
        if d.kind == "impl-func":
            body, how = _structured_call(views, op, cpu, mps, stub, enums, parameters, cpp)
        else:
            body, how, inputs = _copied_body(views, op, cpu, mps, stub, parameters, cpp, _mps_reads(views, sites))
        bodies.append(MpsBody(mps.line.kernel, where, body, how, inputs))
    return PerDevice(sites, tuple(bodies))


def _renamer(old: tuple[tuple[str, str], ...], new: tuple[tuple[str, str], ...]):
    """Rename the CPU function's parameters to the MPS function's (by position: both follow the schema)."""
    mapping = {a: b for (_, a), (_, b) in zip(old, new) if a and b and a != b}
    if not mapping:
        return lambda code: code
    pattern = re.compile(r"\b(" + "|".join(map(re.escape, mapping)) + r")\b")

    def rename(code: str) -> str:
        masked = mask_code(code)
        spans = [(m.start(), m.end(), mapping[m.group(1)]) for m in pattern.finditer(masked)
                 if not (m.start() > 0 and masked[m.start() - 1] in ".>")]  # not a member: `iter.output`
        for start, end, name in reversed(spans):
            code = code[:start] + name + code[end:]
        return code

    return rename


def _structured_call(views, op, cpu, mps, stub, enums, parameters, cpp) -> tuple[str, str]:
    call = read_stub_call(views.ws, (cpu.line.kernel,), stub.name) if cpp else None
    if call is not None:
        rename = _renamer(call.parameters, parameters)
        args = [rename(a.value) for a in call.args]
        how = f"as {call.function} calls it at {call.where}, for kMPS"
    elif cpp:
        raise MpsgenError(f"{cpu.line.kernel} (the `CPU:` function of {cpu.entry.name}) does not call {stub.name} in "
                          f"{NATIVE_DIR}/*.cpp, so what {mps.line.kernel} should pass it is not known",
                          location=cpu.line.location, hint=f"port {mps.line.kernel} by hand")
    else:
        args, how = _declared_args(op, mps, stub, enums, parameters)
    return f"  {stub.name}(kMPS, *this{''.join(', ' + a for a in args)});\n", how


def _declared_args(op, mps, stub, enums, parameters) -> tuple[list[str], str]:
    """Without a .cpp: the stub's parameters after the iterator, one per non-tensor schema argument
    in order, an enum made from its string by the header's helper."""
    entry = mps.entry
    schema = [(type_, name) for type_, name, kw in entry.arguments
              if not type_.startswith("Tensor") and not (kw and "!" in type_)]
    extras = stub.params[1:]
    names = {n for _, n in parameters}
    if len(schema) != len(extras):
        raise MpsgenError(f"{stub.name} takes {len(extras)} parameters besides the iterator but {entry.name} has "
                          f"{len(schema)} non-tensor arguments, and this checkout has no {NATIVE_DIR}/*.cpp to read "
                          f"what the CPU function passes", location=stub.type_location or stub.location,
                          hint=f"port {mps.line.kernel} by hand")
    args, helpers = [], []
    for declared, (type_, name) in zip(extras, schema):
        if name not in names:
            raise MpsgenError(f"{mps.line.kernel} has no parameter named {name}", location=mps.line.location,
                              hint=f"port {mps.line.kernel} by hand")
        enum = enums.get(_enum_name(declared))
        if enum is not None:
            if type_ != "str" or not enum.helper:
                raise MpsgenError(f"{stub.name} takes {enum.name}, and no helper of the headers makes it from "
                                  f"{entry.name}'s `{type_} {name}`", location=enum.location,
                                  hint=f"port {mps.line.kernel} by hand")
            args.append(f"{enum.helper}({name})")
            helpers.append(f"{enum.helper} at {enum.location}")
        else:
            args.append(name)
    how = (f"from {stub.name}'s declaration at {stub.type_location or stub.location} and {entry.name}'s arguments"
           + (f" ({', '.join(helpers)})" if helpers else "") + f", for kMPS (no {NATIVE_DIR}/*.cpp in this checkout)")
    return args, how


_DEVICE = {"CPU": re.compile(r"\b(?:(?:c10::|at::)?(?:DeviceType::CPU|kCPU))\b"),
           "CUDA": re.compile(r"\b(?:(?:c10::|at::)?(?:DeviceType::CUDA|kCUDA))\b")}
_INPUT = re.compile(r"\.\s*add_(?:const_)?input\s*\(\s*(\w+)\s*\)")


def _mps_reads(views: Views, sites) -> frozenset[str] | None:
    """The op's tensor arguments (schema names) its legacy MPS functions read: a parameter used in
    a body other than as an argument of a call of another of the op's MPS functions (the functional
    one hands the out= one everything). log_sigmoid_backward's read self and grad_output, never the
    CPU forward's `buffer` (MPS's forward leaves it empty). None when a body cannot be read."""
    kernels = {mps.line.kernel for _, mps in sites}
    reads = set()
    for _, mps in sites:
        found = mps_definition(views, mps.line.kernel)
        if found is None:
            return None
        rel, text, d = found
        parts = function_parts(text, d)
        if parts is None:
            return None
        parameters, open_at, close_at = parts
        code = mask_code(text)[open_at + 1 : close_at]
        for name in kernels:
            for m in reversed(list(re.finditer(rf"\b{re.escape(name)}\s*\(", code))):
                close = match_brace(code, m.end() - 1)
                code = code[: m.start()] + " " * (close + 1 - m.start()) + code[close + 1 :]
        schema = [(name, kw and "!" in type_) for type_, name, kw in mps.entry.arguments]
        for i, (type_, name) in enumerate(parameters):
            if ("Tensor" in type_ and i < len(schema) and not schema[i][1]
                    and re.search(rf"\b{re.escape(name)}\b", code)):
                reads.add(schema[i][0])
    return frozenset(reads)


def _device_body(views, cpp, line, device: str, stub):
    """(rel, text, parameters, open, close, the stub call's offset in the body, the schema names of the
    iterator's inputs) of a device function building its own iterator, or why it cannot be used."""
    found = _definition(views, cpp, line.kernel)
    if found is None:
        return f"{line.kernel} is not defined in {NATIVE_DIR}/*.cpp"
    rel, text, d = found
    parts = function_parts(text, d)
    where = Location(rel, LineIndex(text).line_of(d.code_start))
    if parts is None:
        return MpsgenError(f"{line.kernel}'s body cannot be delimited", location=where, hint="port it by hand")
    parameters, open_at, close_at = parts
    inner = text[open_at + 1 : close_at]
    masked = mask_code(inner)
    if find_directives(inner, masked):
        return MpsgenError(f"{line.kernel}'s body has preprocessor conditionals (the {device}'s own branches): "
                           f"which of its lines MPS takes is not one mpsgen can tell", location=where,
                           hint="port it by hand")
    calls = [m for m in re.finditer(rf"\b{re.escape(stub.name)}\s*\(\s*", masked)]
    if len(calls) != 1 or not _DEVICE[device].match(masked, calls[0].end()):
        return MpsgenError(f"{line.kernel} does not call {stub.name} once for k{device}", location=where,
                           hint="port it by hand")
    position = {name: i for i, (_, name) in enumerate(parameters)}
    inputs = tuple(m.group(1) for m in _INPUT.finditer(masked))
    return rel, text, parameters, open_at, close_at, calls[0].start(), inputs, position


def _copied_body(views, op, cpu, mps, stub, parameters, cpp, reads) -> tuple[str, str, int]:
    """The body of the device function whose iterator reads only tensors MPS reads: the CPU's, else
    the CUDA's (log_sigmoid_backward: the CPU's iterator holds the CPU forward's `buffer`, which MPS's
    forward leaves empty; the CUDA's does not read it), its device made kMPS."""
    cuda = next((ln for ln in cpu.entry.dispatch if "CUDA" in ln.keys and "CPU" not in ln.keys), None)
    record = recorded_iterator(cuda.kernel) if cuda is not None and not cpp else None
    if record is not None:
        return _recorded_body(op, mps, stub, parameters, reads, record)
    if not cpp:
        read = f" (its legacy MPS functions read {', '.join(sorted(reads))})" if reads else ""
        raise MpsgenError(f"{mps.line.kernel} builds its own iterator (it is not structured) and this checkout has no "
                          f"{NATIVE_DIR}/*.cpp (a wheel ships none): {stub.name} ({stub.signature}) takes an iterator "
                          f"whose operands and their order only the device functions' bodies state ({cpu.line.kernel} "
                          f"and the CUDA one){read}",
                          location=mps.line.location,
                          hint=f"run on a checkout with {NATIVE_DIR}/*.cpp, or port {mps.line.kernel} by hand")
    schema = [name for _, name, _ in cpu.entry.arguments]
    turned = []
    for device, line in (("CPU", cpu.line), ("CUDA", cuda)):
        if line is None:
            continue
        found = _device_body(views, cpp, line, device, stub)
        if isinstance(found, MpsgenError):
            raise MpsgenError(found.message, location=found.location, hint=f"port {mps.line.kernel} by hand")
        if isinstance(found, str):
            turned.append(found)
            continue
        rel, text, device_parameters, open_at, close_at, call_at, inputs, position = found
        named = [schema[position[n]] if n in position and position[n] < len(schema) else n for n in inputs]
        unread = [n for n in named if reads is not None and n not in reads]
        if unread:
            turned.append(f"{line.kernel}'s iterator reads {', '.join(unread)}, which {op}'s legacy MPS functions "
                          f"never read")
            continue
        body = _renamer(device_parameters, parameters)(text[open_at + 1 : close_at])
        masked = mask_code(body)
        for m in reversed(list(_DEVICE[device].finditer(masked))):
            body = body[: m.start()] + "kMPS" + body[m.end() :]
        lines = body.strip("\n").split("\n")
        body = "".join(ln.rstrip() + "\n" for ln in lines)
        at = LineIndex(text).line_of(open_at + 1 + call_at)
        why = f" ({'; '.join(turned)})" if turned else ""
        return body, f"as {line.kernel}'s body makes it ({rel}:{at} calls {stub.name}), for kMPS{why}", len(inputs)
    raise MpsgenError(f"{mps.line.kernel} builds its own iterator (it is not structured) and no device function's "
                      f"body can be taken: {'; '.join(turned)}", location=mps.line.location,
                      hint=f"port {mps.line.kernel} by hand")


def _recorded_body(op, mps, stub, parameters, reads, record: RecordedIterator) -> tuple[str, str, int]:
    """A checkout without .cpp: the MPS body built from the recorded iterator of the CUDA function
    (`facts.recorded.RECORDED_ITERATORS`), once the checkout confirms it: the stub is declared with
    the recorded parameters and the legacy MPS functions read exactly the recorded inputs."""
    where = mps.line.location
    hint = f"port {mps.line.kernel} by hand"
    declared = stub.params
    if stub.name != record.stub or tuple(declared) != record.signature:
        raise MpsgenError(f"{record.describe()}, but {op}'s stub is {stub.name}, declared at {stub.location} as "
                          f"{stub.signature}, not {record.stub} void(*)({', '.join(record.signature)}); the record "
                          "does not hold for this checkout", location=where, hint=hint)
    if reads is None or set(reads) != set(record.inputs):
        read = ", ".join(sorted(reads)) if reads else "nothing mpsgen can read"
        raise MpsgenError(f"{record.describe()}, but {op}'s legacy MPS functions read {read}, not "
                          f"{', '.join(sorted(record.inputs))}; the record does not hold for this checkout",
                          location=where, hint=hint)
    schema = [name for _, name, _ in mps.entry.arguments]
    names = {s: p for s, (_, p) in zip(schema, parameters) if p}
    missing = [n for n in (*record.inputs, *((record.like,) if record.like else (record.output,))) if n not in names]
    if missing:
        raise MpsgenError(f"{record.describe()}, but {mps.line.kernel} takes no parameter for {', '.join(missing)} "
                          f"of {mps.entry.name}'s schema", location=where, hint=hint)
    output = names.get(record.output, record.output)
    lines = []
    if record.like:
        lines.append(f"auto {output} = at::empty_like({names[record.like]});")
    lines.append("auto iter = TensorIteratorConfig()")
    lines.append(f"    .add_output({output})")
    lines += [f"    .add_const_input({names[n]})" for n in record.inputs]
    lines.append("    .build();")
    lines.append(f"{stub.name}(kMPS, iter);")
    lines.append("return iter.output();" if record.like else f"return {output};")
    body = "".join(f"  {line}\n" for line in lines)
    return body, f"from the {record.describe()}, for kMPS", len(record.inputs)


@dataclass(frozen=True)
class MpsFunction:
    """What an MPS function of a per-device op does now (verify)."""

    kernel: str
    location: Location
    calls_stub: bool  # calls the stub for kMPS
    graph: bool  # builds an MPSGraph


def mps_function_state(views: Views, kernel: str, stub: Stub | None) -> MpsFunction | None:
    found = mps_definition(views, kernel)
    if found is None:
        return None
    rel, text, d = found
    masked = mask_code(text)
    code = masked[d.code_start : d.code_end]
    calls = stub is not None and re.search(rf"\b{re.escape(stub.name)}\s*\(\s*(?:c10::|at::)?(?:DeviceType::MPS|kMPS)\b",
                                           code) is not None
    return MpsFunction(kernel, Location(rel, LineIndex(text).line_of(d.code_start)), calls, bool(_GRAPH.search(code)))


def per_device_native_ops(views: Views) -> tuple[str, ...]:
    """The per-device ops whose every MPS function calls their stub for kMPS and builds no graph
    (what `migrate` leaves), with that stub registered for MPS: `verify --all-native` checks them
    with the ops served through a shared line."""
    nf = views.native_functions
    found = []
    for op in nf.op_names:
        entries = nf.op_entries(op)
        sites = per_device_sites(entries)
        if not sites or any(is_shared_line(line) for e in entries for line in e.dispatch):
            continue
        stub = resolve_stub(views, op, (), entries=entries)[0]
        if stub is None or not views.registrations(stub.name):
            continue
        states = [mps_function_state(views, mps.line.kernel, stub) for _, mps in sites]
        if all(s is not None and s.calls_stub and not s.graph for s in states):
            found.append(op)
    return tuple(found)

"""Running the try kernels: on the host (compiler + Metal prelude) or on MPS (torch.mps.compile_shader)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from mpsgen.commands.tryop.coverage import FLAGS as COVERAGE_FLAGS
from mpsgen.commands.tryop.coverage import Coverage, Target, gcov_for, read_coverage
from mpsgen.commands.tryop.lookup import METAL_TO_TORCH, TORCH_TO_METAL
from mpsgen.commands.tryop.reference import import_torch
from mpsgen.commands.tryop.scalars import pack
from mpsgen.commands.tryop.values import Inputs, from_float32_bits
from mpsgen.errors import CheckFailed, MpsgenError
from mpsgen.read.metalhost.check import diagnostic_context, headers_unreadable
from mpsgen.read.metalhost.compiler import (
    PRELUDE_LABEL,
    Compiler,
    attribute,
    find_compiler,
    mixed_bfloat_choice,
    parse_diagnostics,
)
from mpsgen.read.metalhost.owners import CodeOwners, diagnostic_owners
from mpsgen.read.metalhost.rewrite import rewrite_metal
from mpsgen.read.metalhost.slim import declare_only

COMPILE_TIMEOUT = 180.0
RUN_TIMEOUT = 60.0


@dataclass(frozen=True)
class Outputs:
    """What the kernel for one input type produced: its output type and one value per case."""

    metal_type: str
    out_type: str
    values: tuple


def host_unavailable() -> str | None:
    """Why the host path cannot run here, or None."""
    compiler, why = find_compiler()
    return None if compiler is not None else why


def mps_unavailable() -> str | None:
    """Why the MPS path cannot run here, or None."""
    if sys.platform != "darwin":
        return f"not macOS (this is {sys.platform})"
    try:

        torch = import_torch()
    except ImportError:
        return "torch is not importable"
    if not hasattr(torch, "mps") or not hasattr(torch.mps, "compile_shader"):
        return f"torch {torch.__version__} has no torch.mps.compile_shader"
    if not torch.backends.mps.is_available():
        return "torch.backends.mps.is_available() is False"
    return None


@dataclass(frozen=True)
class Measured:
    """Branch coverage of the functor (`coverage.read_coverage`), or why it was not measured."""

    coverage: Coverage | None
    why: str = ""


def run_on_host(program: str, kernel_file: str, work: Path | None = None,
                compiler: Compiler | None = None, functor: str | None = None,
                owners: CodeOwners | None = None, root: Path | None = None,
                coverage: Target | None = None):
    """Compile `program` (the shader source plus the host driver) with the host compiler and the
    Metal prelude, run it, and read its outputs. Returns the outputs and the compiler used, and with
    `coverage` (the functor's lines) a third item, `Measured`: the functor's branch coverage, measured
    with g++'s --coverage and gcov where they are.
    `functor` and `owners` (`metalhost.owners.code_owners` of the kernel file) let a compile error
    in another functor's code be named as such; `root` (the checkout) lets headers the host compiler
    cannot take be named as such (`check.headers_unreadable`)."""
    if compiler is None:
        compiler, why = find_compiler()
        if compiler is None:
            raise MpsgenError(f"cannot run the functor on the host: {why}", hint="install g++ or clang++, or run on a Mac with MPS")
    with tempfile.TemporaryDirectory(prefix="mpsgen-try-", dir=work) as tmp:
        source = Path(tmp) / "try.cpp"
        binary = Path(tmp) / "try"
        source.write_text(rewrite_metal(program), encoding="utf-8")
        gcov, no_gcov = gcov_for(compiler.path, compiler.family) if coverage is not None else (None, "")
        _build(compiler, source, binary, gcov is not None, functor, kernel_file, owners, root)
        try:
            ran = subprocess.run([str(binary)], capture_output=True, text=True, timeout=RUN_TIMEOUT)
        except subprocess.TimeoutExpired:  # most likely a loop as long as an input's value, which try's extremes make endless
            name = f"{functor}'s functor" if functor else "the functor"
            raise CheckFailed(f"{name} did not finish on the host in {RUN_TIMEOUT:g} s on try's values",
                              hint="look for a loop bounded by an input's value: try draws extremes such as 3.4e38") from None
        measured = None
        if coverage is not None and ran.returncode == 0:
            measured = Measured(*read_coverage(Path(tmp), gcov, coverage)) if gcov is not None else Measured(None, no_gcov)
    if ran.returncode != 0:
        raise CheckFailed(f"the functor crashed on the host (exit status {ran.returncode}): {ran.stderr.strip()[:200]}",
                          hint="look for integer division by zero or out-of-range indexing in the functor")
    if coverage is not None:
        return parse_outputs(ran.stdout), compiler.path, measured
    return parse_outputs(ran.stdout), compiler.path


class _Compile:
    """One run of the host compiler, started at once; `stop` ends it (the compiler proper too)."""

    def __init__(self, command: list[str]):
        # a session of its own: stopping it stops the compiler proper (cc1plus) too
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                        start_new_session=True)
        self.args = command
        self.done = False

    def result(self) -> subprocess.CompletedProcess:
        try:
            out, err = self.process.communicate(timeout=COMPILE_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.stop()
        else:
            self.done = True
            return subprocess.CompletedProcess(self.args, self.process.returncode, out, err)
        raise MpsgenError(f"the host compiler did not finish the try program in {COMPILE_TIMEOUT:g} s",
                          hint="run again on a less loaded machine, or on a Mac with MPS (--backend mps)")

    def stop(self) -> None:
        """End the compiler if it still runs (its result is not wanted)."""
        if not self.done:
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except OSError:  # already gone
                pass
            self.process.communicate()
            self.done = True


def _compile(command: list[str]) -> subprocess.CompletedProcess:
    return _Compile(command).result()


def _build(compiler: Compiler, source: Path, binary: Path, coverage: bool, functor: str | None, kernel_file: str,
           owners: CodeOwners | None, root: Path | None) -> None:
    """Build the try program `source` into `binary` (with g++'s coverage flags when `coverage`), or
    raise what the whole program's compile says. The whole program is checked (`-fsyntax-only`:
    every registration of the kernel file instantiated, the diagnostics of a full build); a file
    refused only for a `c ? bfloat : float` is checked again with the conversion explicit, and built
    so (with coverage as well: an untaken branch is never passed over). With g++ the program is then built with only the tried
    functor's registrations instantiated (`metalhost.slim`: ~5x less to compile for a large kernel
    file); where that build fails, the program is built whole. With clang (or no functor named) the
    whole program is built once, as it always was."""

    def command(explicit: bool, instrumented: bool) -> list[str]:
        built = compiler.build_command(source, (), binary, explicit_bfloat=explicit)
        if instrumented:
            built[-3:-3] = list(COVERAGE_FLAGS)
        return built

    if functor is None or compiler.family != "gcc":  # no slim build: the whole program, built once
        built = _compile(command(False, coverage))
        if built.returncode != 0 and mixed_bfloat_choice(built.stderr):
            try:
                again = _compile(command(True, coverage))
            except MpsgenError:
                again = None
            if again is not None and again.returncode == 0:
                built = again
        if built.returncode != 0:
            raise _compile_failure(built.stderr, kernel_file, functor, owners, root, compiler)
        return
    checked, explicit = _compile(_syntax_only(command(False, False))), False
    if checked.returncode != 0 and mixed_bfloat_choice(checked.stderr):
        # `c ? bfloat : float`: again with float -> bfloat explicit (compiler.EXPLICIT_BFLOAT)
        try:
            again = _compile(_syntax_only(command(True, False)))
        except MpsgenError:
            again = None
        if again is not None and again.returncode == 0:
            checked, explicit = again, True
    if checked.returncode != 0:
        raise _compile_failure(checked.stderr, kernel_file, functor, owners, root, compiler)
    slim = _slim_build(command(explicit, coverage), functor)
    if slim is not None:
        try:
            if slim.result().returncode == 0:
                return
        finally:
            slim.stop()
    built = _compile(command(explicit, coverage))
    if built.returncode != 0:
        raise _compile_failure(built.stderr, kernel_file, functor, owners, root, compiler)


def _syntax_only(command: list[str]) -> list[str]:
    """A build command (`... SOURCE -o BINARY`) as a check of the source alone."""
    return [*command[:-2], "-fsyntax-only"]


def _slim_build(command: list[str], functor: str) -> _Compile | None:
    """The build `command` (`... SOURCE -o BINARY`), started on the preprocessed source with the
    other functors' registrations declared only (`slim.declare_only`); None when the source does
    not preprocess. Each build writes its own preprocessed file."""
    source, binary = Path(command[-3]), Path(command[-1])
    flags = [c for c in command[1:-3] if c not in COVERAGE_FLAGS]
    expanded_path = source.with_name(f"{source.stem}-{len(list(source.parent.glob('*.ii')))}.ii")
    try:
        expanded = _compile([command[0], *flags, "-E", str(source), "-o", str(expanded_path)])
        if expanded.returncode != 0:
            return None
        slim, _ = declare_only(expanded_path.read_text(encoding="utf-8", errors="surrogateescape"), functor)
        expanded_path.write_text(slim, encoding="utf-8", errors="surrogateescape")
        return _Compile([*command[:-3], "-x", "c++-cpp-output", str(expanded_path), "-o", str(binary)])
    except (MpsgenError, OSError):
        return None


def _compile_failure(stderr: str, kernel_file: str, functor: str | None = None,
                     owners: CodeOwners | None = None, root: Path | None = None,
                     compiler: Compiler | None = None) -> MpsgenError:
    if root is not None and compiler is not None:
        text = (Path(root) / kernel_file).read_text(encoding="utf-8", errors="replace")
        why = headers_unreadable(Path(root), kernel_file, text, compiler, stderr)
        if why is not None:
            return MpsgenError(f"cannot run {kernel_file} on the host: {why}",
                               hint="run it on a Mac with MPS (--backend mps)")
    found = parse_diagnostics(stderr)
    if not found:
        tail = (stderr.strip().splitlines() or ["no output"])[-1]
        return CheckFailed(f"the try program did not compile: {tail}", hint="run with --debug; this may be a bug in mpsgen's prelude")
    attributed = [attribute(d, kernel_file) for d in found]
    if all(where.path.startswith(PRELUDE_LABEL) for where, _ in attributed):
        where, message = attributed[0]
        return MpsgenError(f"the host compiler cannot compile mpsgen's Metal prelude ({where}: {message})",
                           hint="use g++ 12+ or clang++ 15+ ($MPSGEN_CXX), or run on a Mac with MPS")
    index, (where, message) = next((i, a) for i, a in enumerate(attributed) if not a[0].path.startswith(PRELUDE_LABEL))
    more = f" (+{len(found) - 1} more)" if len(found) > 1 else ""
    hint = "fix the kernel file; `mpsgen verify OP --static-only` lists every error"
    if functor is not None and owners is not None:
        context = diagnostic_context(found[index], kernel_file, where)
        belongs = diagnostic_owners(context.lines, owners, context.functors)
        if functor not in belongs:
            whose = ", ".join(f"{name}_functor" for name in belongs) or "other code of the file"
            hint = (f"pre-existing: in {whose}, not {functor}_functor; the whole kernel file must compile "
                    f"for try to run {functor}_functor on the host")
    return CheckFailed(f"{message}{more}", location=where, hint=hint)


def _decode(token: str, out_type: str):
    if token == "x":
        return None  # not run (see the host driver)
    if ":" in token:
        re_bits, im_bits = token.split(":")
        return complex(from_float32_bits(int(re_bits, 16)), from_float32_bits(int(im_bits, 16)))
    if out_type in ("float", "half", "bfloat"):
        return from_float32_bits(int(token, 16))
    return int(token)


def parse_outputs(stdout: str) -> list[Outputs]:
    found = []
    for line in stdout.splitlines():
        parts = line.split()
        if len(parts) < 3 or parts[0] != "mpsgen-try":
            continue
        _, metal_type, out_type, *tokens = parts
        found.append(Outputs(metal_type, out_type, tuple(_decode(t, out_type) for t in tokens)))
    return found


def run_on_mps(source: str, inputs: list[Inputs], out_dtypes: dict[str, str], scalars: dict | None = None) -> list[Outputs]:
    """Run the try kernels of `source` on the GPU through torch.mps.compile_shader (macOS with MPS).
    `out_dtypes` maps each Metal input type to the torch dtype name of its output buffer. `scalars`
    (alpha and params kernels): input type -> (alpha type, fields, [(set index, field values)]); the
    kernel takes the alpha or struct as a constant buffer, passed as a uint8 tensor of its bytes,
    and runs once per set (outputs named `<type>#<set index>`, as the host driver prints them)."""

    torch = import_torch()

    library = torch.mps.compile_shader(source)
    found = []
    for case in inputs:
        dtype = getattr(torch, METAL_TO_TORCH[case.metal_type])
        tensors = [torch.tensor(list(column), dtype=dtype, device="mps") for column in case.columns]
        kernel = getattr(library, f"mpsgen_try_{case.metal_type}")
        runs = [("", ())]
        if scalars is not None:
            _, fields, sets = scalars[case.metal_type]
            runs = [(f"#{index}", (torch.tensor(list(pack(fields, values)), dtype=torch.uint8, device="mps"),))
                    for index, values in sets]
        for tag, extra in runs:
            out = torch.empty(case.count, dtype=getattr(torch, out_dtypes[case.metal_type]), device="mps")
            kernel(out, *tensors, *extra)
            torch.mps.synchronize()
            found.append(Outputs(case.metal_type + tag, TORCH_TO_METAL.get(out_dtypes[case.metal_type], "other"),
                                 tuple(out.cpu().tolist())))
    return found

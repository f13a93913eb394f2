"""The Metal front end on 2.15-shaped c10/metal headers (issue 26): the constructs 2.15's headers
use compile, a defect in the kernel file is still found at its line, and a header the host compiler
cannot take makes metal-compile and try skip with the reason instead of blaming the kernel file.

tests/data/metal215 is our own 2.15-shaped header set (see its README), overlaid on a copy of the
miniature checkout, whose own headers stay 2.13-shaped."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from mpsgen.model import Location
from mpsgen.read.metalhost.check import compile_metal_file
from mpsgen.read.metalhost.compiler import PRELUDE, Compiler, find_compiler
from mpsgen.read.metalhost.rewrite import rewrite_metal
from support import copy_checkout, needs, run_cli

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "pytorch"
SET_215 = Path(__file__).resolve().parent / "data" / "metal215"
KERNELS = "aten/src/ATen/native/mps/kernels"
LAYOUT = f"{KERNELS}/Layout215.metal"
UNREADABLE = f"{KERNELS}/Unreadable215.metal"
BINARY = f"{KERNELS}/BinaryKernel.metal"

needs_compiler = needs(None if find_compiler()[0] is not None else "no C++ compiler (g++/clang++) on PATH")


def _overlay(root: Path) -> Path:
    shutil.copytree(SET_215 / "c10", root / "c10", dirs_exist_ok=True)
    shutil.copytree(SET_215 / "aten", root / "aten", dirs_exist_ok=True)
    return root


@pytest.fixture(scope="module")
def headers_215(tmp_path_factory) -> Path:
    """The miniature checkout's c10/metal and kernels, with the 2.15-shaped set added."""
    root = tmp_path_factory.mktemp("metal215")
    shutil.copytree(FIXTURE / "c10", root / "c10")
    shutil.copytree(FIXTURE / KERNELS, root / KERNELS)
    return _overlay(root)


def _line(text: str, needle: str) -> int:
    assert text.count(needle) == 1, needle
    return text[: text.index(needle)].count("\n") + 1


# ---- rewrites (no compiler needed) -------------------------------------------------------------


def test_a_definition_repeating_another_once_address_spaces_are_erased_is_blanked():
    text = (SET_215 / "c10/metal/offsets.h").read_text(encoding="utf-8")
    out = rewrite_metal(text)
    assert out.count("\n") == text.count("\n")
    changed = [n for n, (new, old) in enumerate(zip(out.splitlines(), text.splitlines()), 1) if new != old]
    first_twin = _line(text, "inline T read_at(device const void* base")
    thread_spec = _line(text, "struct pointee<thread T*>")
    # the second read_at (its template head to its closing brace), pointee<thread T*> (a twin of
    # pointee<device T*>), and the second const of the macro; pointee<constant T*> is `const T*`: kept
    assert changed == [5, *range(first_twin - 1, first_twin + 4), *range(thread_spec - 1, thread_spec + 3)]
    assert all(not line.strip() for line in out.splitlines()[first_twin - 2: first_twin + 3])
    assert "#define OFFSETS_CONST static constant constexpr\n" in out
    assert "struct pointee<constant T*>" in out and "inline T read_at(constant void* base" in out


def test_a_definition_repeated_in_the_same_address_space_is_left_for_the_compiler():
    text = ("inline int f(device int* p) { return *p; }\n"
            "inline int f(device int* q) { return *q + 1; }\n"
            "inline int g(device int* p) { return *p; }\n"
            "inline int g(thread int* p) { return *p; }\n"
            "namespace other { inline int f(thread int* p) { return 0; } }\n")
    out = rewrite_metal(text).splitlines()
    assert out[0:3] == text.splitlines()[0:3]
    assert not out[3].strip()  # g's thread twin
    assert out[4] == text.splitlines()[4]  # another scope


def test_metal_compile_reads_the_prelude_before_the_files_first_line():
    for compiler in (Compiler("g++", "gcc"), Compiler("clang++", "clang")):
        command = compiler.syntax_command(Path("k.metal"), (Path("inc"),))
        assert command[-4:] == ["-include", str(PRELUDE), "-fsyntax-only", "k.metal"]


# ---- compiling the constructs ------------------------------------------------------------------


@needs_compiler
def test_each_215_construct_compiles_clean(headers_215):
    """__METAL__ tested before any metal header, metal::vec, fast::divide, address-space twins (an
    overload pair and class-template specializations), `static constant constexpr const`, and
    overloads picked by sizeof(float3)."""
    result = compile_metal_file(headers_215, LAYOUT)
    assert (result.status, result.diagnostics, result.reason) == ("passed", (), "")


@needs_compiler
def test_the_2_13_shaped_kernel_files_still_compile_beside_the_215_set(headers_215):
    for path in sorted((FIXTURE / KERNELS).glob("*.metal")):
        result = compile_metal_file(headers_215, f"{KERNELS}/{path.name}")
        assert (result.status, result.diagnostics) == ("passed", ()), path.name


@needs_compiler
def test_a_functor_used_before_its_struct_is_reported_at_the_line_that_uses_it(headers_215):
    """Upstream's placement bug (a registration naming a functor above its struct) is the kernel
    file's own error, with 2.15's headers too."""
    text = (headers_215 / LAYOUT).read_text(encoding="utf-8")
    struct = text[text.index("struct scale_functor {"): text.index("};\n", text.index("struct scale_functor {")) + 3]
    moved = text.replace(struct, "", 1) + "\n" + struct
    line = _line(moved, "  scale_functor f;")
    result = compile_metal_file(headers_215, LAYOUT, text=moved)
    assert result.status == "failed"
    assert result.diagnostics[0] == (Location(LAYOUT, line), "‘scale_functor’ was not declared in this scope")
    assert {loc.path for loc, _ in result.diagnostics} == {LAYOUT}, result.diagnostics


@needs_compiler
def test_a_defect_beside_the_215_constructs_is_reported_at_its_line(headers_215):
    text = (headers_215 / LAYOUT).read_text(encoding="utf-8")
    line = _line(text, "read_at<float>(again,")
    result = compile_metal_file(headers_215, LAYOUT, text=text.replace("read_at<float>(again,", "read_at<float>(agian,"))
    assert result.status == "failed"
    assert [loc for loc, _ in result.diagnostics] == [Location(LAYOUT, line)], result.diagnostics


@needs_compiler
def test_a_header_the_prelude_cannot_take_skips_with_the_reason(headers_215):
    header = f"{KERNELS}/Raytrace.h"
    line = _line((headers_215 / header).read_text(encoding="utf-8"), "::metal::raytracing::ray r;")
    result = compile_metal_file(headers_215, UNREADABLE)
    assert (result.status, result.diagnostics) == ("skipped", ())
    assert result.reason.endswith(
        f"with mpsgen's Metal prelude cannot take the checkout's headers ({header}:{line}: ‘metal::raytracing’ has "
        "not been declared; the file's #include lines alone give it): upstream builds them with the Metal "
        "compiler, so nothing here is checked")


@needs_compiler
def test_an_error_of_the_kernel_file_inside_a_header_is_not_a_skip(headers_215):
    """An error located in a header but caused by the kernel file (a wrong template argument) is not
    reproduced by the #include lines alone: a finding, not a skip."""
    text = (headers_215 / LAYOUT).read_text(encoding="utf-8")
    line = _line(text, "width_class(a)")
    result = compile_metal_file(headers_215, LAYOUT, text=text.replace("width_class(a)", "width_class(short(1))"))
    assert result.status == "failed"
    assert Location(LAYOUT, line) in {loc for loc, _ in result.diagnostics}


# ---- try and verify on a 2.15-shaped checkout -------------------------------------------------


def _checkout_215(tmp_path: Path, *first_includes: str) -> Path:
    """The miniature checkout with the 2.15 set, hypot added, and BinaryKernel.metal including
    `first_includes` before anything else (as 2.15's kernel files include their kernels/*.h)."""
    root = _overlay(copy_checkout(tmp_path))
    result = run_cli(["-C", str(root), "new-op", "hypot"])
    assert result.exit_code == 0, result.output
    path = root / BINARY
    path.write_text("".join(f"#include <{h}>\n" for h in first_includes) + path.read_text(encoding="utf-8"),
                    encoding="utf-8")
    return root


@needs_compiler
def test_try_runs_a_functor_whose_file_includes_a_215_header_first(tmp_path):
    root = _checkout_215(tmp_path, "ATen/native/mps/kernels/Order.h")
    result = run_cli(["-C", str(root), "try", "hypot", "--reference", "catalog"])
    assert result.exit_code == 0, result.output
    assert "3 dtype(s): all match" in result.stdout


@needs_compiler
def test_try_says_in_one_line_that_the_headers_cannot_be_taken(tmp_path):
    root = _checkout_215(tmp_path, "ATen/native/mps/kernels/Order.h", "ATen/native/mps/kernels/Raytrace.h")
    before = {p: p.read_bytes() for p in root.rglob("*") if p.is_file()}
    result = run_cli(["-C", str(root), "try", "hypot", "--reference", "catalog"])
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1
    assert result.stderr.startswith(f"mpsgen: error: cannot run {BINARY} on the host: ")
    assert f"cannot take the checkout's headers ({KERNELS}/Raytrace.h:6: ‘metal::raytracing’ has not been declared" in result.stderr
    assert result.stderr.rstrip().endswith("(run it on a Mac with MPS (--backend mps))")
    assert {p: p.read_bytes() for p in root.rglob("*") if p.is_file()} == before


@needs_compiler
def test_verify_skips_metal_compile_with_the_reason(tmp_path):
    root = _checkout_215(tmp_path, "ATen/native/mps/kernels/Order.h", "ATen/native/mps/kernels/Raytrace.h")
    result = run_cli(["-C", str(root), "verify", "hypot", "--static-only", "--json"])
    doc = json.loads(result.stdout)
    (check,) = [c for s in doc["stages"] for c in s.get("checks", []) if c["check"] == "metal-compile"]
    assert check["status"] == "skipped" and check["findings"] == []
    assert f"cannot take the checkout's headers ({KERNELS}/Raytrace.h:6:" in check["reason"]
    assert not [f for f in doc["findings"] if f["check"] == "metal-compile"]

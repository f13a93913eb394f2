"""The host compiler's verdicts kept in the user cache (`metalhost.check.run_compiler`,
`cache.cached_result`): the same bytes compile once whichever checkout holds them, any changed byte
or compiler setting compiles afresh, and what did not finish is never kept."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from mpsgen.read import cache
from mpsgen.read.metalhost.check import compile_metal_file
from mpsgen.read.metalhost.compiler import find_compiler
from support import copy_checkout, needs

BINARY = "aten/src/ATen/native/mps/kernels/BinaryKernel.metal"
UTILS = "c10/metal/utils.h"
needs_compiler = needs(None if find_compiler()[0] is not None else "no C++ compiler (g++/clang++) on PATH")


@pytest.fixture
def compiles(tmp_path, monkeypatch):
    """The kernel-file checks of this test (their command lines; not the one-time build of the
    precompiled prelude), in a cache directory of its own."""
    monkeypatch.setenv("MPSGEN_CACHE_DIR", str(tmp_path / "cache"))
    ran: list[list[str]] = []
    real_run = subprocess.run

    def counting(command, *args, **kwargs):
        if "-fsyntax-only" in command:
            ran.append(list(command))
        return real_run(command, *args, **kwargs)

    monkeypatch.setattr(subprocess, "run", counting)
    return ran


def _broken(root: Path) -> str:
    """BinaryKernel.metal with an error on a line of its own (an undeclared name in a functor)."""
    text = (root / BINARY).read_text(encoding="utf-8")
    first = text.index("struct ")
    return text[:first] + "static_assert(mpsgen_undeclared_name, \"\");\n" + text[first:]


@needs_compiler
def test_the_same_bytes_compile_once_whichever_checkout_holds_them(tmp_path, compiles):
    one, two = copy_checkout(tmp_path / "one"), copy_checkout(tmp_path / "two")
    text = _broken(one)
    first = compile_metal_file(one, BINARY, text=text)
    assert first.status == "failed" and len(compiles) == 1
    assert any("mpsgen_undeclared_name" in message for _, message in first.diagnostics)
    again = compile_metal_file(two, BINARY, text=text)
    assert len(compiles) == 1  # from the cache
    assert (again.status, again.diagnostics, again.contexts) == (first.status, first.diagnostics, first.contexts)
    clean = compile_metal_file(two, BINARY)
    assert clean.status == "passed" and len(compiles) == 2
    assert compile_metal_file(one, BINARY).status == "passed" and len(compiles) == 2
    assert len(list((tmp_path / "cache" / "metal-compile").glob("*.json"))) == 2


@needs_compiler
def test_a_changed_header_byte_or_compiler_setting_compiles_afresh(tmp_path, compiles, monkeypatch):
    root = copy_checkout(tmp_path)
    assert compile_metal_file(root, BINARY).status == "passed" and len(compiles) == 1
    utils = (root / UTILS).read_text(encoding="utf-8")
    assert compile_metal_file(root, BINARY, texts={UTILS: utils + " "}).status == "passed"
    assert len(compiles) == 2
    (root / UTILS).write_text(utils + "#error a header broken on disk\n", encoding="utf-8")
    assert compile_metal_file(root, BINARY).status == "skipped"  # the checkout's own headers
    assert len(compiles) >= 3
    (root / UTILS).write_text(utils, encoding="utf-8")
    count = len(compiles)
    assert compile_metal_file(root, BINARY).status == "passed" and len(compiles) == count
    monkeypatch.setenv("CPLUS_INCLUDE_PATH", str(tmp_path))
    assert compile_metal_file(root, BINARY).status == "passed" and len(compiles) == count + 1
    kept = sorted((tmp_path / "cache" / "metal-compile").glob("*.json"))
    monkeypatch.setenv("MPSGEN_NO_CACHE", "1")
    compile_metal_file(root, BINARY)
    compile_metal_file(root, BINARY)
    assert len(compiles) == count + 3
    assert sorted((tmp_path / "cache" / "metal-compile").glob("*.json")) == kept


@needs_compiler
def test_a_compile_that_timed_out_is_not_kept(tmp_path, compiles, monkeypatch):
    root = copy_checkout(tmp_path)
    real_run = subprocess.run

    def timing_out(command, *args, **kwargs):
        raise subprocess.TimeoutExpired(command, 120)

    monkeypatch.setattr(subprocess, "run", timing_out)
    result = compile_metal_file(root, BINARY)
    assert result.status == "failed" and "took more than" in result.diagnostics[0][1]
    monkeypatch.setattr(subprocess, "run", real_run)
    assert compile_metal_file(root, BINARY).status == "passed"


def test_results_beyond_the_kept_number_go_least_recently_used_first(tmp_path, monkeypatch):
    monkeypatch.setenv("MPSGEN_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(cache, "RESULTS_KEPT", 3)
    runs = []

    def result(name: str) -> dict:
        return cache.cached_result("k", [name], lambda: runs.append(name) or {"name": name})

    folder = tmp_path / "cache" / "k"
    for name in ("a", "b", "c"):
        assert result(name) == {"name": name}
    for age, path in enumerate(sorted(folder.glob("*.json"), key=lambda p: cache._load(p)["variants"][0]["name"])):
        os.utime(path, ns=(10**18 + age * 10**9,) * 2)  # a, b, c: oldest first, on any file system
    assert result("a") == {"name": "a"}  # used again: now the newest
    assert result("d") == {"name": "d"}  # four kept: "b", the least recently used, goes
    assert sorted(cache._load(p)["variants"][0]["name"] for p in folder.glob("*.json")) == ["a", "c", "d"]
    assert runs == ["a", "b", "c", "d"]
    result("b")
    assert runs == ["a", "b", "c", "d", "b"]


def test_inputs_are_delimited(tmp_path, monkeypatch):
    """["ab", "c"] and ["a", "bc"] are different inputs."""
    monkeypatch.setenv("MPSGEN_CACHE_DIR", str(tmp_path / "cache"))
    assert cache.cached_result("k", ["ab", "c"], lambda: {"v": 1}) == {"v": 1}
    assert cache.cached_result("k", ["a", "bc"], lambda: {"v": 2}) == {"v": 2}
    assert cache.cached_result("k", ["ab", b"c"], lambda: {"v": 3}) == {"v": 1}



@needs_compiler
def test_the_precompiled_prelude_gives_the_same_verdicts_and_a_bad_one_is_read_as_the_header(tmp_path, monkeypatch):
    """g++ checks a kernel file with the prelude precompiled once into the user cache: the same
    diagnostics (naming the prelude's own files) as with the plain prelude; a precompiled file g++
    cannot use is passed over for the header it came from; clang and MPSGEN_NO_CACHE=1 read the
    plain prelude."""
    from mpsgen.read.metalhost import compiler as host

    compiler = find_compiler()[0]
    if compiler.family != "gcc":
        pytest.skip(f"the precompiled prelude is g++'s; this compiler is {compiler.path}")
    monkeypatch.setenv("MPSGEN_CACHE_DIR", str(tmp_path / "cache"))
    root = copy_checkout(tmp_path)
    text = _broken(root)
    header = host.precompiled_prelude(compiler)
    assert header is not None and header.is_relative_to(tmp_path / "cache" / "pch")
    assert header.read_text() == f'#include "{host.PRELUDE}"\n' and header.with_name(header.name + ".gch").is_file()
    command = compiler.syntax_command(Path("k.metal"), ())
    assert command[command.index("-include") + 1] == str(header)
    with_pch = compile_metal_file(root, BINARY, text=text)
    header.with_name(header.name + ".gch").write_bytes(b"not a precompiled header")
    monkeypatch.setenv("MPSGEN_CACHE_DIR", str(tmp_path / "cache-2"))  # no kept verdicts, a new .gch
    (tmp_path / "cache-2" / "pch").mkdir(parents=True)
    bad = tmp_path / "cache-2" / "pch" / header.parent.name
    bad.mkdir()
    (bad / header.name).write_text(header.read_text())
    (bad / (header.name + ".gch")).write_bytes(b"not a precompiled header")
    assert host.precompiled_prelude(compiler) == bad / header.name
    with_bad_pch = compile_metal_file(root, BINARY, text=text)
    monkeypatch.setenv("MPSGEN_NO_CACHE", "1")
    assert host.precompiled_prelude(compiler) is None
    command = compiler.syntax_command(Path("k.metal"), ())
    assert command[command.index("-include") + 1] == str(host.PRELUDE)
    plain = compile_metal_file(root, BINARY, text=text)
    assert with_pch.status == with_bad_pch.status == plain.status == "failed"
    assert with_pch.diagnostics == with_bad_pch.diagnostics == plain.diagnostics
    assert with_pch.contexts == with_bad_pch.contexts == plain.contexts
    assert compile_metal_file(root, BINARY).status == "passed"
    monkeypatch.delenv("MPSGEN_NO_CACHE")
    shutil.rmtree(tmp_path / "cache-2")  # the user emptied the cache: built again, not a missing -include
    rebuilt = host.precompiled_prelude(compiler)
    assert rebuilt is not None and rebuilt.is_file() and rebuilt.with_name(rebuilt.name + ".gch").stat().st_size > 1000
    clang = host.Compiler("/usr/bin/clang++", "clang")
    assert host.precompiled_prelude(clang) is None

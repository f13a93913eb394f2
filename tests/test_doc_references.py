"""What the docs, CI script, templates and benchmarks name of the package exists: a dotted
`mpsgen.x.y` is a module (or a name in one) and a path `mpsgen/...` is a file or folder of the
repository. A module moved without its mentions (CI once imported `mpsgen.clangformat` after the
layout had moved it to `mpsgen.edit.clangformat`) fails here, not in a user's hands."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SOURCES = [REPO / "README.md", REPO / "pyproject.toml", REPO / ".ci" / "run", *sorted((REPO / "docs").glob("*.md")),
           *sorted((REPO / "templates").rglob("*.j2")), *sorted((REPO / "benchmarks").glob("*.py")),
           REPO / "benchmarks" / "README.md"]
DOTTED = re.compile(r"(?<![\w./-])mpsgen(?:\.[A-Za-z_]\w*)+")
PATH = re.compile(r"(?<![\w./-])mpsgen/[\w./-]*\w")
NOT_MODULES = {"mpsgen.toml", "mpsgen.fish"}  # file names that happen to start with mpsgen.


def references(pattern: re.Pattern) -> list[tuple[str, int, str]]:
    found = []
    for source in SOURCES:
        if not source.is_file():
            continue
        for number, line in enumerate(source.read_text(encoding="utf-8").splitlines(), 1):
            found.extend((str(source.relative_to(REPO)), number, m.group(0)) for m in pattern.finditer(line))
    return found


def resolves(dotted: str) -> bool:
    parts = dotted.split(".")
    for cut in range(len(parts), 1, -1):
        try:
            module = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        target = module
        for name in parts[cut:]:
            if not hasattr(target, name):
                return False
            target = getattr(target, name)
        return True
    return False


def installed_path(rel: str) -> bool:
    """`mpsgen/templates` is where the wheel puts the repository's `templates/` (pyproject)."""
    if (REPO / rel).exists():
        return True
    return rel.startswith("mpsgen/templates") and (REPO / rel.replace("mpsgen/", "", 1)).exists()


def test_the_sources_are_read():
    assert any(ref for _, _, ref in references(DOTTED))


@pytest.mark.parametrize("where, line, ref", [r for r in references(DOTTED) if r[2] not in NOT_MODULES])
def test_dotted_names_are_modules(where, line, ref):
    assert resolves(ref), f"{where}:{line}: {ref} names no module or name of the package"


@pytest.mark.parametrize("where, line, ref", references(PATH))
def test_paths_exist(where, line, ref):
    assert installed_path(ref), f"{where}:{line}: {ref} is not in the repository"


def test_the_checker_catches_a_moved_module():
    assert not resolves("mpsgen.clangformat.find_executable")
    assert resolves("mpsgen.edit.clangformat.find_executable")
    assert not installed_path("mpsgen/facts.py") and installed_path("mpsgen/facts/catalog.toml")

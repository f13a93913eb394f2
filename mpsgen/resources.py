"""Where mpsgen's package data lives: the functor templates, the catalog, the Metal prelude."""

from __future__ import annotations

from pathlib import Path

from mpsgen.errors import MpsgenError


def shipped_template_dir() -> Path:
    """Inside the wheel templates live at mpsgen/templates; in a source tree at ../templates."""
    here = Path(__file__).resolve().parent
    for candidate in (here / "templates", here.parent / "templates"):
        if candidate.is_dir():
            return candidate
    raise MpsgenError("mpsgen's templates are missing from the installation", hint="reinstall mpsgen")

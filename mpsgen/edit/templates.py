"""The Jinja templates the file families render (host functions, headers, launchers): the loader
lives in `mpsgen.facts.templates` (the plan renders the functor text with it); this name is kept
for edit/'s writers."""

from __future__ import annotations

from mpsgen.facts.templates import OVERRIDE_DIR, Templates

__all__ = ["OVERRIDE_DIR", "Templates"]

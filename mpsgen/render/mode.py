"""Which renderer a report gets: rich tables and colour on a terminal, plain lines elsewhere (CI
logs, pipes, files), GitHub Actions workflow commands on request. `NO_COLOR` (any non-empty value,
https://no-color.org) turns colour off wherever it would be used."""

from __future__ import annotations

import os

AUTO, RICH, PLAIN, GITHUB = "auto", "rich", "plain", "github"
FORMATS = (AUTO, RICH, PLAIN)


def resolve(requested: str, stream) -> str:
    """The renderer for `requested` (`auto`: rich when `stream` is a terminal, else plain)."""
    if requested != AUTO:
        return requested
    isatty = getattr(stream, "isatty", None)
    return RICH if isatty is not None and isatty() else PLAIN


def colour_allowed() -> bool:
    return not os.environ.get("NO_COLOR")


def console(*, stderr: bool = False, soft_wrap: bool = False):
    """A rich Console for a renderer that has chosen rich: always treated as a terminal (so that
    `--format rich` works through a pipe), with no ANSI codes at all under NO_COLOR."""
    from rich.console import Console

    return Console(stderr=stderr, force_terminal=True, color_system="auto" if colour_allowed() else None,
                   highlight=False, soft_wrap=soft_wrap)

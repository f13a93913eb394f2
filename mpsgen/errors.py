"""Errors meant for people: one line saying what, where (path:line) and what to do."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mpsgen.model import Location

EXIT_CHECK_FAILED = 1
EXIT_BAD_INPUT = 2


class MpsgenError(Exception):
    """A user-facing error: bad usage or bad input. Exit code 2, nothing written."""

    exit_code = EXIT_BAD_INPUT

    def __init__(self, message: str, *, location: Location | None = None, hint: str | None = None):
        super().__init__(message)
        self.message = message
        self.location = location
        self.hint = hint

    def __str__(self) -> str:
        text = f"{self.location}: {self.message}" if self.location else self.message
        if self.hint:
            text = f"{text} ({self.hint})"
        return text


class CheckFailed(MpsgenError):
    """What was checked is wrong, not the input (`mpsgen try`: the kernel does not compile, or
    crashes). Exit code 1, nothing written."""

    exit_code = EXIT_CHECK_FAILED

"""The `metal-compile` check of `mpsgen verify`: the op's kernel files compile with the host
compiler and the Metal prelude. verify.py holds only the hook; the logic is here."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from mpsgen.metalhost.check import FAILED, SKIPPED, CompileResult, compile_metal_file, double_literal_findings
from mpsgen.model import Location

HINT = "fix the kernel file; mpsgen compiled it with the host compiler and its Metal prelude"
REQUIRED_HINT = "install g++ or clang++ (or set $MPSGEN_CXX), or drop --require-metal-compile"


@dataclass
class MetalCompiles:
    """The kernel files compiled during one verify run (each once, however many ops share it)."""

    root: Path
    required: bool = False
    results: dict[str, CompileResult] = field(default_factory=dict)

    def result(self, rel: str) -> CompileResult:
        """The compiler's verdict on `rel` (double literals are looked for per functor, in check)."""
        if rel not in self.results:
            self.results[rel] = compile_metal_file(self.root, rel, literals_in=())
        return self.results[rel]

    def check(self, kernel_files: list[str], functor: str) -> str | list[tuple[Location, str, str]]:
        """The reason the check is skipped, or its findings as (location, message, hint): none
        when every file compiled clean and the op's functor has no double literal. (Other
        functors' literals are not the op's business: Metal reads them as float.)"""
        if not kernel_files:
            return "no kernel file defines the functor (see kernel-name)"
        findings: list[tuple[Location, str, str]] = []
        for rel in kernel_files:
            result = self.result(rel)
            if result.status == SKIPPED:
                if self.required:
                    findings.append((Location(rel, 1), f"{rel} was not compiled: {result.reason}", REQUIRED_HINT))
                    continue
                return f"{result.reason}; --require-metal-compile makes this a failure"
            if result.status == FAILED:
                findings.extend((where, message, HINT) for where, message in result.diagnostics)
            text = (self.root / rel).read_text(encoding="utf-8", errors="replace")
            findings.extend((where, message, HINT) for where, message in double_literal_findings(text, rel, (functor,)))
        return findings

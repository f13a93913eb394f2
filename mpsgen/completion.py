"""Shell completion of operator names (click's `shell_complete` on the OP arguments).

Reads only the `- func:` lines of the checkout's native_functions.yaml (one regex pass, no YAML
parse), so that a Tab press stays fast on a real-size checkout. Completion never fails: outside a
checkout, or when the file cannot be read, it offers nothing."""

from __future__ import annotations

import re
from pathlib import Path

from mpsgen.read.checkout import NATIVE_FUNCTIONS, Checkout

_FUNC_NAME = re.compile(r"^- func:[ \t]*([A-Za-z0-9_]+)", re.MULTILINE)


def op_names(root: Path) -> list[str]:
    """The base names of the ops in `root`'s native_functions.yaml, in file order, each once."""
    from mpsgen.read.nfyaml import base_name

    text = (root / NATIVE_FUNCTIONS).read_text(encoding="utf-8", errors="replace")
    return list(dict.fromkeys(base_name(name) for name in _FUNC_NAME.findall(text)))


def complete_ops(ctx, param, incomplete: str) -> list[str]:
    """Op names starting with `incomplete`, from the checkout given by `-C` or found upward from the
    current directory."""
    try:
        explicit = ctx.find_root().params.get("checkout_dir")
        root = Checkout.find(explicit).root
        return [name for name in op_names(root) if name.startswith(incomplete)]
    except Exception:  # completion must never print a traceback into the user's shell
        return []

"""The op's OpInfo tolerance overrides for MPS: what TestConsistency.test_output_match accepts."""

from __future__ import annotations

import ast
from dataclasses import dataclass

from mpsgen.model import Location
from mpsgen.read.checkout import COMMON_METHODS, Checkout
from mpsgen.read.opinfo import callee_name, canonical_torch_dtype, opinfo_calls, string_constant


@dataclass(frozen=True)
class Tolerance:
    rtol: float
    atol: float
    location: Location  # the DecorateInfo that sets it


def opinfo_tolerances(checkout: Checkout, op: str) -> dict[str, Tolerance]:
    """torch dtype name -> tolerance, from `DecorateInfo(toleranceOverride({torch.float16: tol(atol=...,
    rtol=...)}), "TestConsistency", "test_output_match", device_type="mps")` in the op's OpInfos (the
    first one per dtype). Empty when the file or the OpInfo cannot be read: the defaults apply."""

    found: dict[str, Tolerance] = {}
    for ref, tree in opinfo_calls(checkout, op) or ():
        if tree is None:
            continue
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and callee_name(node) == "DecorateInfo"):
                continue
            positional = list(node.args)
            keywords = {k.arg: k.value for k in node.keywords if k.arg is not None}
            decorator = positional[0] if positional else keywords.get("decorators")
            slots = dict(zip(("cls_name", "test_name", "device_type"), positional[1:]))
            slots.update({k: v for k, v in keywords.items() if k in ("cls_name", "test_name", "device_type")})
            if not (isinstance(decorator, ast.Call) and callee_name(decorator) == "toleranceOverride"
                    and decorator.args and isinstance(decorator.args[0], ast.Dict)):
                continue
            if string_constant(slots.get("device_type")) != "mps":
                continue
            if string_constant(slots.get("cls_name")) not in (None, "TestConsistency"):
                continue
            if string_constant(slots.get("test_name")) not in (None, "test_output_match"):
                continue
            where = Location(COMMON_METHODS, ref.location.line + node.lineno - 1)
            table = decorator.args[0]
            for key, value in zip(table.keys, table.values):
                dtype = canonical_torch_dtype(key) if key is not None else None
                numbers = _tol(value)
                if dtype and numbers:
                    found.setdefault(dtype, Tolerance(numbers[0], numbers[1], where))
    return found


def _tol(node: ast.expr) -> tuple[float, float] | None:
    """(rtol, atol) of `tol(atol=..., rtol=...)` with literal numbers."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "tol"):
        return None
    values = {}
    for keyword in node.keywords:
        try:
            values[keyword.arg] = float(ast.literal_eval(keyword.value))
        except (ValueError, TypeError, SyntaxError):
            return None
    if not node.keywords and len(node.args) == 2:  # tol(atol, rtol)
        try:
            values = {"atol": float(ast.literal_eval(node.args[0])), "rtol": float(ast.literal_eval(node.args[1]))}
        except (ValueError, TypeError, SyntaxError):
            return None
    if "atol" not in values or "rtol" not in values:
        return None
    return values["rtol"], values["atol"]

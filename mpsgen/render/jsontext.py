"""`json.dumps(value, indent=2)`, the same text, written faster: the standard library encodes an
indented document in pure Python through nested generators (and only an unindented one in C); a
scan's document (one record per op of native_functions.yaml, ~0.9 MB) takes it ~65 ms. Here the
strings go through the C string encoder and the containers through one recursive function."""

from __future__ import annotations

import json
from json.encoder import encode_basestring_ascii

_INFINITY = float("inf")


def dumps_indented(value, indent: int = 2) -> str:
    """Exactly `json.dumps(value, indent=indent)` for JSON data (dicts with str, int, float, bool or
    None keys, lists, tuples, str, int, float, bool, None); anything else goes to `json.dumps`."""
    out: list[str] = []
    try:
        _write(value, out, "\n", " " * indent)
    except _NotPlain:
        return json.dumps(value, indent=indent)
    return "".join(out)


class _NotPlain(Exception):
    """A value json.dumps handles its own way (an unknown type, a subclass of a JSON type): it gets
    the whole value. (JSON data has no cycles: the documents mpsgen writes are built fresh.)"""


def _scalar(value) -> str:
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    kind = type(value)
    if kind is int:
        return int.__repr__(value)
    if kind is float:
        if value != value:
            return "NaN"
        if value == _INFINITY:
            return "Infinity"
        if value == -_INFINITY:
            return "-Infinity"
        return float.__repr__(value)
    raise _NotPlain


def _key(key) -> str:
    kind = type(key)
    if kind is str:
        return encode_basestring_ascii(key)
    if kind in (int, float, bool) or key is None:
        return '"' + _scalar(key) + '"'
    raise _NotPlain


def _write(value, out: list[str], newline: str, step: str) -> None:
    kind = type(value)
    if kind is str:
        out.append(encode_basestring_ascii(value))
    elif kind is dict or kind is list or kind is tuple:
        mapping = kind is dict
        if not value:
            out.append("{}" if mapping else "[]")
            return
        inner = newline + step
        separator = "," + inner
        out.append(("{" if mapping else "[") + inner)
        first = True
        for item in value.items() if mapping else value:
            if not first:
                out.append(separator)
            first = False
            if mapping:
                key, item = item
                out.append(_key(key) + ": ")
            _write(item, out, inner, step)
        out.append(newline + ("}" if mapping else "]"))
    else:
        out.append(_scalar(value))

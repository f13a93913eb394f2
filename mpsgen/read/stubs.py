"""Dispatch stubs declared in `aten/src/ATen/native/*.h`.

    using unary_fn = void(*)(TensorIteratorBase&);
    DECLARE_DISPATCH(unary_fn, abs_stub)
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from mpsgen.model import Location
from mpsgen.read.cache import cached_index
from mpsgen.read.checkout import NATIVE_DIR
from mpsgen.read.cpp import mask_code, match_brace, split_top_level
from mpsgen.textedit import LineIndex

_USING = re.compile(
    r"\busing\s+(?P<name>\w+)\s*=\s*(?P<ret>[\w:<>,&* ]+?)\s*\(\s*\*\s*\)\s*\((?P<params>[^;]*?)\)\s*;", re.S
)
_DECLARE = re.compile(r"\bDECLARE_DISPATCH\s*\(")

ITERATOR_TYPES = ("TensorIteratorBase&", "TensorIterator&")
_QUALIFIERS = ("const", "unsigned", "signed", "long", "short", "volatile")


@dataclass(frozen=True)
class Stub:
    """A dispatch stub: its name, the function type it was declared with, and that type's params."""

    name: str
    fn_type: str
    params: tuple[str, ...]
    location: Location
    type_location: Location | None
    returns: str = "void"

    @property
    def header(self) -> str:
        return self.location.path.rsplit("/", 1)[-1]

    @property
    def signature(self) -> str:
        return f"{self.returns}(*)({', '.join(self.params)})"

    @property
    def iterator_type(self) -> str | None:
        return self.params[0] if self.params and self.params[0] in ITERATOR_TYPES else None

    @property
    def scalar_count(self) -> int:
        return sum(1 for p in self.params[1:] if p == "const Scalar&")

    @property
    def supported(self) -> bool:
        """Supported now: an iterator alone, or an iterator and one Scalar."""
        return (
            self.returns == "void"
            and self.iterator_type is not None
            and self.params[1:] in ((), ("const Scalar&",))
        )


def normalise_param(param: str) -> str:
    """`const c10::Scalar& alpha` -> `const Scalar&`; `at::TensorIteratorBase &iter` -> `TensorIteratorBase&`."""
    text = " ".join(param.replace("&", " & ").replace("*", " * ").split())
    text = re.sub(r"\b(?:at|c10)::", "", text)
    tokens = text.split(" ")
    # drop a trailing parameter name (an identifier after the type)
    if len(tokens) > 1 and re.fullmatch(r"[A-Za-z_]\w*", tokens[-1]):
        before = tokens[-2]
        if before in ("&", "*") or (
            re.fullmatch(r"[A-Za-z_][\w:<>]*", before) and before not in _QUALIFIERS
        ):
            tokens = tokens[:-1]
    text = " ".join(tokens)
    return text.replace(" &", "&").replace(" *", "*").strip()


def split_params(params: str) -> tuple[str, ...]:
    return tuple(normalise_param(p) for p in split_top_level(params, "(<[", ")>]") if p.strip())


def scan_types(text: str, path: str, masked: str | None = None, index: LineIndex | None = None) -> dict[str, tuple[tuple[str, ...], Location, str]]:
    """The `using <name> = <ret>(*)(...)` function types of one header (`masked`/`index`: the
    header's `mask_code` text and LineIndex when the caller has them already)."""
    masked = mask_code(text) if masked is None else masked
    index = LineIndex(text) if index is None else index
    types = {}
    for match in _USING.finditer(masked):
        params = split_params(masked[match.start("params") : match.end("params")])
        returns = " ".join(match.group("ret").split())
        types[match.group("name")] = (params, Location(path, index.line_of(match.start())), returns)
    return types


def _in_preprocessor_line(text: str, offset: int) -> bool:
    line_start = text.rfind("\n", 0, offset) + 1
    if text[line_start:offset].lstrip().startswith("#"):
        return True
    previous_end = line_start - 1
    return previous_end > 0 and text[:previous_end].rstrip(" \t\r").endswith("\\")


def scan_header(text: str, path: str, types: dict | None = None, masked: str | None = None) -> list[Stub]:
    """Every DECLARE_DISPATCH of one header, with the `using` types it refers to resolved (from this
    header, then from `types`, the other headers' types)."""
    masked = mask_code(text) if masked is None else masked
    index = LineIndex(text)
    local = scan_types(text, path, masked, index) if "using" in masked else {}
    stubs = []
    for match in _DECLARE.finditer(masked):
        if _in_preprocessor_line(masked, match.start()):
            continue
        open_at = match.end() - 1
        close = match_brace(masked, open_at)
        if close < 0:
            continue
        inner = masked[open_at + 1 : close]
        depth, split_at = 0, -1
        for k, ch in enumerate(inner):
            if ch in "(<":
                depth += 1
            elif ch in ")>":
                depth -= 1
            elif ch == "," and depth == 0:
                split_at = k
        if split_at < 0:
            continue
        fn_type = " ".join(inner[:split_at].split())
        name = inner[split_at + 1 :].strip()
        location = Location(path, index.line_of(match.start()))
        returns = "void"
        if fn_type in local or (types is not None and fn_type in types):
            params, type_location, returns = local[fn_type] if fn_type in local else types[fn_type]
        else:
            inline = re.fullmatch(r"([\w:<>,&* ]+?)\s*\(\s*\*\s*\)\s*\((.*)\)", fn_type, re.S)
            params = split_params(inline.group(2)) if inline else ()
            returns = " ".join(inline.group(1).split()) if inline else "?"
            type_location = location if inline else None
        stubs.append(Stub(name, fn_type, params, location, type_location, returns))
    return stubs


def read_stubs(checkout, disk_cache: bool = False) -> dict[str, Stub]:
    """All stubs declared in the checkout's `aten/src/ATen/native/*.h`, by name. `disk_cache`: kept
    in the user cache (`mpsgen.read.cache`) while the headers (their names and texts) hash the same."""

    headers = checkout.glob(NATIVE_DIR, "*.h")
    if disk_cache:
        every = "".join(f"{rel}\0{len(checkout.read(rel))}\0{checkout.read(rel)}" for rel in headers)
        data = cached_index(checkout.root, NATIVE_DIR, every, "stubs",
                            lambda: [_stub_to_json(stub) for stub in _read_stubs(checkout, headers).values()])
        return {stub.name: stub for stub in map(_stub_from_json, data)}
    return _read_stubs(checkout, headers)


def _stub_to_json(stub: Stub) -> list:
    where = stub.type_location
    return [stub.name, stub.fn_type, list(stub.params), stub.location.path, stub.location.line,
            [where.path, where.line] if where else None, stub.returns]


def _stub_from_json(data: list) -> Stub:
    name, fn_type, params, path, line, where, returns = data
    return Stub(name, fn_type, tuple(params), Location(path, line), Location(*where) if where else None, returns)


def _read_stubs(checkout, headers: list[str]) -> dict[str, Stub]:
    masked = {rel: mask_code(checkout.read(rel)) for rel in headers}
    types: dict = {}
    for rel in headers:
        if "using" in masked[rel]:
            types.update(scan_types(checkout.read(rel), rel, masked[rel]))
    stubs: dict[str, Stub] = {}
    for rel in headers:
        if "DECLARE_DISPATCH" not in masked[rel]:
            continue
        for stub in scan_header(checkout.read(rel), rel, types, masked[rel]):
            stubs.setdefault(stub.name, stub)
    return stubs


def find_stub(checkout, names: list[str]) -> Stub | None:
    """The first of `names` declared in the checkout's headers, reading only the headers that
    mention it (and, for its function type, the header that declares that type)."""
    import re as _re

    headers = checkout.glob(NATIVE_DIR, "*.h")
    for name in names:
        pattern = _re.compile(rf"DECLARE_DISPATCH\s*\([^;]*?\b{_re.escape(name)}\s*\)")
        for rel in headers:
            text = checkout.read(rel)
            if name not in text or not pattern.search(text):
                continue
            for stub in scan_header(text, rel, _LazyTypes(checkout, headers)):
                if stub.name == name:
                    return stub
    return None


class _LazyTypes(dict):
    """A type table that looks a `using` name up in the other headers only when asked."""

    def __init__(self, checkout, headers):
        super().__init__()
        self._checkout = checkout
        self._headers = headers

    def __contains__(self, key):
        if dict.__contains__(self, key):
            return True
        pattern = re.compile(rf"\busing\s+{re.escape(key)}\s*=")
        for rel in self._headers:
            text = self._checkout.read(rel)
            if key in text and pattern.search(text):
                self.update(scan_types(text, rel))
                return dict.__contains__(self, key)
        return False

    def __getitem__(self, key):
        if key in self:
            return dict.__getitem__(self, key)
        raise KeyError(key)

"""Jinja templates: shipped ones, overridable per checkout from `.mpsgen/templates/`."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path

from mpsgen.errors import MpsgenError
from mpsgen.model import Location
from mpsgen.read.cache import cache_dir, cache_enabled, cached_result
from mpsgen.resources import shipped_template_dir

OVERRIDE_DIR = Path(".mpsgen") / "templates"


class Templates:
    """Renders templates by name; a checkout's `.mpsgen/templates/<name>` wins over the shipped one."""

    def __init__(self, checkout_root: Path | None = None):
        self._search = []
        self.override_dir = None
        if checkout_root is not None and (checkout_root / OVERRIDE_DIR).is_dir():
            self.override_dir = checkout_root / OVERRIDE_DIR
            self._search.append(str(self.override_dir))
        self._search.append(str(shipped_template_dir()))
        self._env = None
        self._digest: str | None = None

    @property
    def _jinja(self):
        import jinja2  # on the first render: a plan that renders nothing (an op already native) never loads it

        return jinja2

    @property
    def env(self):
        if self._env is None:
            jinja2 = self._jinja
            self._env = jinja2.Environment(
                loader=jinja2.FileSystemLoader(self._search),
                bytecode_cache=_bytecode_cache(jinja2),
                undefined=jinja2.StrictUndefined,
                keep_trailing_newline=True,
                trim_blocks=True,
                lstrip_blocks=True,
                autoescape=False,
            )
        return self._env

    def exists(self, name: str) -> bool:
        try:
            self.env.get_template(name)
        except self._jinja.TemplateNotFound:
            return False
        except self._jinja.TemplateSyntaxError:
            return True
        return True

    def render(self, name: str, /, **context) -> str:
        """The template rendered with `context`; kept in the user cache by every template's source
        and the context (plain data only), so a run that renders what an earlier one did (a dry run,
        then the run) neither loads jinja2 nor renders."""
        try:
            data = json.dumps(context, sort_keys=True, default=_as_key_data)
        except TypeError:  # not plain data: rendered every time
            return self._render(name, context)
        return cached_result("rendered", [self._sources_digest(), name, data],
                             lambda: {"text": self._render(name, context)})["text"]

    def _sources_digest(self) -> str:
        """Every file of the template directories, overrides first: what a rendering may read."""
        if self._digest is None:
            digest = hashlib.sha256()
            for directory in self._search:
                for path in sorted(p for p in Path(directory).rglob("*") if p.is_file()):
                    for part in (str(path.relative_to(directory)).encode("utf-8", "surrogateescape"), path.read_bytes()):
                        digest.update(len(part).to_bytes(8, "little"))
                        digest.update(part)
                digest.update(b"\0")
            self._digest = digest.hexdigest()
        return self._digest

    def _render(self, name: str, context: dict) -> str:
        jinja2 = self._jinja
        try:
            return self.env.get_template(name).render(**context)
        except jinja2.TemplateSyntaxError as exc:
            where = exc.filename or name
            raise MpsgenError(
                f"template syntax error: {exc.message}",
                location=_loc(where, exc.lineno),
                hint="fix or delete the template override",
            ) from None
        except jinja2.UndefinedError as exc:
            raise MpsgenError(
                f"template {name} uses an undefined variable: {exc.message}",
                hint="templates may only use the documented variables",
            ) from None
        except jinja2.TemplateNotFound:
            raise MpsgenError(f"template {name} not found", hint="reinstall mpsgen") from None


def _as_key_data(value):
    """For a rendering's cache key: a set in its context as its sorted members, a dataclass
    instance (frozen records of mpsgen's model) as its class and fields, each marked as such."""
    if isinstance(value, (set, frozenset)):
        return {"set": sorted(value)}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        kind = type(value)
        return {"dataclass": f"{kind.__module__}.{kind.__qualname__}",
                "fields": {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}}
    raise TypeError(f"{type(value).__name__} is not plain data")


def _bytecode_cache(jinja2):
    """Compiled templates kept in the user cache directory (`mpsgen.read.cache`; jinja2 keys each by
    the template's name and file and uses it only while the template's source hashes the same and
    for the same Python), so that a run renders without compiling its templates again. None when
    the cache is off or its directory cannot be made; a cache file that cannot be written is
    skipped."""

    class _Quiet(jinja2.FileSystemBytecodeCache):
        def dump_bytecode(self, bucket) -> None:
            try:
                super().dump_bytecode(bucket)
            except OSError:
                pass  # an unwritable cache directory: render without keeping the compiled template

    if not cache_enabled():
        return None
    try:
        directory = cache_dir() / "templates"
        directory.mkdir(parents=True, exist_ok=True)
    except (OSError, RuntimeError):  # no home directory to find the cache in
        return None
    return _Quiet(str(directory))


def _loc(path: str, line: int | None):
    return Location(path, line or 1)

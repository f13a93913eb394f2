"""Jinja templates: shipped ones, overridable per checkout from `.mpsgen/templates/`."""

from __future__ import annotations

from pathlib import Path

from mpsgen.errors import MpsgenError
from mpsgen.model import Location
from mpsgen.resources import shipped_template_dir

OVERRIDE_DIR = Path(".mpsgen") / "templates"


class Templates:
    """Renders templates by name; a checkout's `.mpsgen/templates/<name>` wins over the shipped one."""

    def __init__(self, checkout_root: Path | None = None):
        import jinja2

        search = []
        self.override_dir = None
        if checkout_root is not None and (checkout_root / OVERRIDE_DIR).is_dir():
            self.override_dir = checkout_root / OVERRIDE_DIR
            search.append(str(self.override_dir))
        search.append(str(shipped_template_dir()))
        self._jinja = jinja2
        self.env = jinja2.Environment(
            loader=jinja2.FileSystemLoader(search),
            undefined=jinja2.StrictUndefined,
            keep_trailing_newline=True,
            trim_blocks=True,
            lstrip_blocks=True,
            autoescape=False,
        )

    def exists(self, name: str) -> bool:
        try:
            self.env.get_template(name)
        except self._jinja.TemplateNotFound:
            return False
        except self._jinja.TemplateSyntaxError:
            return True
        return True

    def render(self, name: str, /, **context) -> str:
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


def _loc(path: str, line: int | None):
    return Location(path, line or 1)

"""MkDocs hook: reference tables generated from the code at build time, so they
cannot drift from it.

A page asks for a table with a marker line, replaced when the page is built:

- ``<!-- generated: settings -->``: every ``DISPATCH_JOBS`` key, its default and
  what it does, from the table in ``dispatch_jobs/conf/``;
- ``<!-- generated: checks -->``: every system-check id found in the package, with
  its message (placeholders shown as ``‹name›``) and where it is raised;
- ``<!-- generated: runjobs -->``: the ``runjobs`` arguments from its argparse parser;
- ``<!-- generated: permissions -->``: the app's custom model permissions.
"""

from __future__ import annotations

import ast
import html
import re
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dispatch_jobs.conf import Section

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "dispatch_jobs"
MARKER = re.compile(r"^<!-- generated: (\w+) -->$", re.MULTILINE)


def on_page_markdown(markdown: str, **kwargs: Any) -> str:
    def replace(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in GENERATORS:
            raise ValueError(f"unknown generated table {name!r}; known: {sorted(GENERATORS)}")
        return GENERATORS[name]()

    return MARKER.sub(replace, markdown)


def _django() -> None:
    """The generators read the app's models and command: a minimal Django."""
    import django
    from django.conf import settings

    if not settings.configured:
        settings.configure(
            INSTALLED_APPS=["django.contrib.contenttypes", "django.contrib.auth", "dispatch_jobs"],
            DATABASES={"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"}},
        )
        django.setup()


def _cell(text: str) -> str:
    """Plain text for a Markdown table cell: no markup, no HTML, one line."""
    text = html.escape(text.replace("\n", " ").strip(), quote=False)
    return re.sub(r"([\\`*_\[\]|])", r"\\\1", text)


# --- settings -------------------------------------------------------------------


def describe_default(value: object) -> str:
    """The default as Python you could paste: ``timedelta(minutes=5)``, ``65536``."""
    if isinstance(value, timedelta):
        seconds = value.total_seconds()
        for unit, size in (("days", 86400), ("hours", 3600), ("minutes", 60), ("seconds", 1)):
            if seconds >= size and seconds % size == 0:
                return f"`timedelta({unit}={int(seconds // size)})`"
        return f"`timedelta(milliseconds={seconds * 1000:g})`"
    return f"`{value!r}`"


def settings_rows() -> Iterator[tuple[Section, str, object, str]]:
    """(section, key, default, description) of every setting, in the order
    ``dispatch_jobs.conf.Settings`` declares them."""
    _django()
    from dispatch_jobs.conf import TABLE

    for setting in TABLE:
        yield setting.section, setting.key, setting.default, setting.doc


def _values(key: str) -> str:
    """What ``key`` accepts, as its check says it."""
    from dispatch_jobs.conf import TABLE

    return next(setting.kind.expected for setting in TABLE if setting.key == key)


def settings_table() -> str:
    out: list[str] = []
    current = None
    for section, key, default, description in settings_rows():
        if section != current:
            current = section
            out += ["", f"### {section.title}", ""]
            out += [section.note, ""] if section.note else []
            out += ["| key | default | values | what it does |", "|---|---|---|---|"]
        values, text = _cell(_values(key)), _cell(description)
        out.append(f"| `{key}` | {describe_default(default)} | {values} | {text} |")
    return "\n".join(out).strip() + "\n"


# --- system checks --------------------------------------------------------------

CHECK_ID = re.compile(r"^dispatch_jobs\.[CEW]\d{3}$")
LEVELS = {"Error": "error", "Warning": "warning", "Critical": "critical"}


def _text(node: ast.expr) -> str:
    """A message expression as text, its computed parts as ‹source›."""
    if isinstance(node, ast.Constant):
        return str(node.value)
    if isinstance(node, ast.JoinedStr):
        return "".join(
            str(part.value) if isinstance(part, ast.Constant) else _text(part)
            for part in node.values
        )
    if isinstance(node, ast.FormattedValue):
        return _placeholder(node.value)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _text(node.left) + _text(node.right)
    return _placeholder(node)


def _placeholder(node: ast.expr) -> str:
    """A computed part: its variable's name when it is that simple, else ‹…›."""
    source = ast.unparse(node)
    simple = isinstance(node, ast.Name | ast.Attribute | ast.Subscript) and len(source) <= 24
    return f"‹{source}›" if simple and "(" not in source else "‹…›"


def _name(call: ast.Call) -> str:
    func = call.func
    return func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")


def _messages(call: ast.Call) -> tuple[str, str, str]:
    level = LEVELS[_name(call)]
    message = _text(call.args[0]) if call.args else ""
    for keyword in call.keywords:
        if keyword.arg == "msg":
            message = _text(keyword.value)
    hint = next((_text(k.value) for k in call.keywords if k.arg == "hint"), "")
    return level, message, hint


def check_rows() -> list[tuple[str, str, str, str, str]]:
    """(id, level, message, hint, module) for every check id the package raises:
    in an ``Error``/``Warning`` call itself, or passed to a helper of the same
    module that builds one, or declared for a setting's value in the settings
    table (``dispatch_jobs/conf/``, the module of the setting's section)."""
    _django()
    from dispatch_jobs.conf import TABLE, Settings

    rows: dict[tuple[str, str], tuple[str, str, str, str, str]] = {}
    for setting in TABLE:
        if setting.check:
            message = setting.kind.message("DISPATCH_JOBS[‹key›]", "‹value›")
            section = next(c for c in Settings.__mro__ if setting.key.lower() in vars(c))
            module = section.__module__.replace(".", "/") + ".py"
            row = (setting.check, "error", message, setting.kind.hint, module)
            rows[(setting.check, message)] = row
    for path in sorted(PACKAGE.rglob("*.py")):
        if "migrations" in path.parts:
            continue
        tree = ast.parse(path.read_text())
        helpers = {
            node.name: next(
                (c for c in ast.walk(node) if isinstance(c, ast.Call) and _name(c) in LEVELS),
                None,
            )
            for node in ast.walk(tree)
            if isinstance(node, ast.FunctionDef)
        }
        module = str(path.relative_to(ROOT))
        for call in (n for n in ast.walk(tree) if isinstance(n, ast.Call)):
            for arg in [*call.args, *(k.value for k in call.keywords)]:
                if not (isinstance(arg, ast.Constant) and CHECK_ID.match(str(arg.value))):
                    continue
                built = call if _name(call) in LEVELS else helpers.get(_name(call))
                if built is None:
                    continue
                level, message, hint = _messages(built)
                rows[(str(arg.value), message)] = (str(arg.value), level, message, hint, module)
    return sorted(rows.values())


def checks_table() -> str:
    out = ["| id | level | message | raised in |", "|---|---|---|---|"]
    for check_id, level, message, hint, module in check_rows():
        text = _cell(message) + (f"<br>*Hint:* {_cell(hint)}" if hint else "")
        where = module.removeprefix("dispatch_jobs/")
        out.append(f"| `{check_id}` | {level} | {text} | `{where}` |")
    return "\n".join(out) + "\n"


# --- runjobs --------------------------------------------------------------------


def runjobs_rows() -> tuple[str, list[tuple[str, str]], list[str]]:
    """(usage, [(option, help)] of runjobs's own arguments, [Django's common options])."""
    _django()
    from django.core.management.base import BaseCommand

    from dispatch_jobs.management.commands.runjobs import Command

    parser = Command().create_parser("manage.py", "runjobs")
    common = {
        option
        for action in BaseCommand().create_parser("manage.py", "base")._actions
        for option in action.option_strings
    }
    own, shared = [], []
    for action in parser._actions:
        if not action.option_strings:
            continue
        if set(action.option_strings) <= common:
            shared.append(", ".join(action.option_strings))
            continue
        metavar = f" {action.metavar}" if action.metavar else ""
        options = ", ".join(f"{option}{metavar}" for option in action.option_strings)
        own.append((options, action.help or ""))
    usage = parser.format_usage().replace("usage: ", "").strip()
    return usage, own, shared


def runjobs_table() -> str:
    usage, own, shared = runjobs_rows()
    out = ["```text", usage, "```", "", "| argument | what it does |", "|---|---|"]
    out += [f"| `{options}` | {_cell(text)} |" for options, text in own]
    out += ["", "Django's common options apply too: " + ", ".join(f"`{o}`" for o in shared) + "."]
    return "\n".join(out) + "\n"


# --- admin permissions ----------------------------------------------------------


def permission_rows() -> list[tuple[str, str, str]]:
    """(model, codename, description) of every custom permission of the app."""
    _django()
    from django.apps import apps

    return [
        (model.__name__, f"dispatch_jobs.{codename}", text)
        for model in apps.get_app_config("dispatch_jobs").get_models()
        for codename, text in model._meta.permissions
    ]


def permissions_table() -> str:
    out = ["| permission | on model | grants |", "|---|---|---|"]
    out += [f"| `{code}` | `{model}` | {_cell(text)} |" for model, code, text in permission_rows()]
    return "\n".join(out) + "\n"


GENERATORS: dict[str, Callable[[], str]] = {
    "settings": settings_table,
    "checks": checks_table,
    "runjobs": runjobs_table,
    "permissions": permissions_table,
}

"""The write seam as a fact: only ``dispatch_jobs/store/`` writes the app's rows.

Two checks. At run time (a pytest plugin, on for every test): each INSERT,
UPDATE or DELETE on one of the app's tables that a test's connection executes
is traced back through its stack; a write issued by code of the app outside the
store (or by Django's admin) is recorded and fails the test. A test's own
set-up (factories, ``Job.objects.update`` in a test) is not the app's code and
passes. Statically (``scan``): no module of the app outside the store calls a
model's write methods or carries SQL that writes the app's tables, which also
covers the code that runs in worker processes.
"""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
from django.apps import apps
from django.db import connections

PACKAGE = Path(__file__).resolve().parent.parent / "dispatch_jobs"
STORE = PACKAGE / "store"
MIGRATIONS = PACKAGE / "migrations"
ADMIN_OF_DJANGO = f"{Path('django') / 'contrib' / 'admin'}"

_WRITE = re.compile(r"\b(?:INSERT\s+INTO|UPDATE|DELETE\s+FROM|REPLACE\s+INTO)\s+[`\"]?(\w+)", re.I)
_WRITE_METHODS = frozenset(
    {"save", "delete", "update", "bulk_create", "bulk_update", "create"}
    | {"get_or_create", "update_or_create"}
)


def tables() -> frozenset[str]:
    return frozenset(m._meta.db_table for m in apps.get_app_config("dispatch_jobs").get_models())


def models() -> frozenset[str]:
    return frozenset(m.__name__ for m in apps.get_app_config("dispatch_jobs").get_models())


def written_tables(sql: str) -> set[str]:
    """The app's tables a statement writes."""
    return {name for name in _WRITE.findall(sql) if name in tables()}


def writer(stack: list[str]) -> str | None:
    """Who issued a write, from its stack's file names (innermost last): None
    when the store (or a migration) did or no code of the app is on the stack;
    else the file of the innermost app or admin frame that is not the store's."""
    if any(_within(name, STORE) or _within(name, MIGRATIONS) for name in stack):
        return None
    for name in reversed(stack):
        if _within(name, PACKAGE) or ADMIN_OF_DJANGO in name:
            return name
    return None


def _within(name: str, folder: Path) -> bool:
    return name.startswith(f"{folder}{'/'}")


class Guard:
    """An execute wrapper recording writes of the app's rows made outside the store."""

    def __init__(self) -> None:
        self.violations: list[str] = []

    def __call__(self, execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        if isinstance(sql, str) and written_tables(sql):
            frame = sys._getframe(1)
            stack = []
            while frame is not None:
                stack.append(frame.f_code.co_filename)
                frame = frame.f_back
            who = writer(stack[::-1])
            if who is not None:
                self.violations.append(f"{who} wrote: {sql[:120]}")
        return execute(sql, params, many, context)

    def installed(self) -> ExitStack:
        stack = ExitStack()
        for connection in connections.all():
            stack.enter_context(connection.execute_wrapper(self))
        return stack


@pytest.fixture(autouse=True)
def write_seam() -> Iterator[Guard]:
    guard = Guard()
    with guard.installed():
        yield guard
    assert not guard.violations, "rows written outside dispatch_jobs/store/:\n" + "\n".join(
        guard.violations
    )


# --- the static check


def scan(source: str, filename: str = "<source>") -> list[str]:
    """Writes of the app's rows in ``source``: calls of a write method on a
    model, its manager or a queryset of it, and SQL text writing its tables."""
    found = []
    names = models()
    for node in ast.walk(ast.parse(source, filename)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr in _WRITE_METHODS:
                receiver = ast.unparse(node.func.value)
                mentioned = set(re.findall(r"\w+", receiver))
                if mentioned & names or "objects" in mentioned and "LogEntry" not in mentioned:
                    found.append(f"{filename}:{node.lineno}: {ast.unparse(node)[:100]}")
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and written_tables(node.value)
        ):
            found.append(f"{filename}:{node.lineno}: SQL {node.value[:80]!r}")
    return found


def modules_outside_the_store() -> Iterator[Path]:
    for path in sorted(PACKAGE.rglob("*.py")):
        if not (_within(str(path), STORE) or _within(str(path), MIGRATIONS)):
            yield path

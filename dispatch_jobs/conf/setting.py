"""The declaration of one setting: ``Setting``, the descriptor each key of
``DISPATCH_JOBS`` is declared as, and ``Section``, the part of the settings page
(and the check function, in checks.py) it belongs to."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, overload

from ..setting_kinds import Kind

if TYPE_CHECKING:
    from . import Settings


# What a read may hand out again: a value no caller can change (a list or a dict
# is read afresh each time, so changing one changes nothing else).
IMMUTABLE = (str, int, float, bool, timedelta, tuple, frozenset, type(None))


@dataclass(frozen=True)
class Section:
    """A part of the settings page, and the check function of its values (checks.py)."""

    title: str
    note: str = ""


STORE = Section("The store")
WORKER = Section("The runjobs worker", "Command-line arguments override these (docs/worker.md).")
ADMIN = Section("The admin", "See docs/admin.md.")
METRICS = Section("Metrics", "See docs/observability.md.")
TASKS = Section("The tasks backend", "See docs/tasks.md.")
ARTIFACTS = Section(
    "Artifacts and estimates", "See docs/how-to/inputs.md and docs/how-to/estimates.md."
)


class Setting[T]:
    """One key of ``DISPATCH_JOBS``, declared as the attribute of ``Settings`` that is
    its name in lower case. Reading the attribute gives the value as ``T``: the
    user's, else the default (``or_setting``: an empty value reads as that setting)."""

    def __init__(
        self,
        section: Section,
        kind: Kind[T],
        default: T,
        doc: str,
        *,
        check: str = "",
        or_setting: str = "",
    ) -> None:
        self.section, self.kind, self.default, self.doc = section, kind, default, doc
        self.check, self.or_setting = check, or_setting
        self.key = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.key = name.upper()

    @overload
    def __get__(self, instance: None, owner: type) -> Setting[T]: ...

    @overload
    def __get__(self, instance: Settings, owner: type) -> T: ...

    def __get__(self, instance: Settings | None, owner: type) -> Setting[T] | T:
        if instance is None:
            return self
        known = instance.read_values
        if self.key in known:
            return known[self.key]
        value = instance.user_settings.get(self.key, self.default)
        if self.or_setting and not value:
            value = instance.get(self.or_setting)
        result = self.kind.read(value)
        if isinstance(result, IMMUTABLE):
            known[self.key] = result
        return result

    def problem(self, value: object) -> str | None:
        """The check's message refusing ``value`` for this key, or None."""
        return self.kind.problem(self.key, value) if self.check else None

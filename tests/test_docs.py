"""The documentation site builds strictly: any MkDocs warning (a link to a missing
page or anchor, a page left out of the nav) fails the build, and the reference
tables generated from the code (scripts/mkdocs_hooks.py) cover all of it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import connection

from dispatch_jobs.conf import DEFAULTS

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import mkdocs_hooks  # noqa: E402

pytestmark = pytest.mark.skipif(
    connection.vendor != "sqlite",
    reason="the site does not depend on the database: built once, on the SQLite run",
)


@pytest.mark.slow
def test_the_site_builds_with_no_warning(tmp_path):
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    # Not -q: quiet mode hides warnings from --strict, which then passes.
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(tmp_path / "site")],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    assert "WARNING" not in output, output
    settings_page = (tmp_path / "site" / "reference" / "settings" / "index.html").read_text()
    for key in DEFAULTS:
        assert f"<code>{key}</code>" in settings_page, key
    assert "<!-- generated:" not in settings_page


def test_every_setting_has_a_description_in_conf_py():
    rows = list(mkdocs_hooks.settings_rows())
    assert [key for _, key, _, _ in rows] == list(DEFAULTS)
    assert [key for _, key, _, text in rows if not text] == []


def test_the_settings_page_has_a_row_for_every_setting_in_the_table():
    """docs/reference/settings.md is generated from the table: each key, its default
    and what it accepts (the checks' own words)."""
    from dispatch_jobs.conf import TABLE

    table = mkdocs_hooks.settings_table()
    page = (ROOT / "docs" / "reference" / "settings.md").read_text()
    assert "<!-- generated: settings -->" in page
    for setting in TABLE:
        assert f"| `{setting.key}` | {mkdocs_hooks.describe_default(setting.default)} |" in table
        assert mkdocs_hooks._cell(setting.kind.expected) in table


def test_the_checks_reference_lists_every_id_the_code_raises():
    source = "\n".join(p.read_text() for p in (ROOT / "dispatch_jobs").rglob("*.py"))
    import re

    raised = set(re.findall(r"\"(dispatch_jobs\.[CEW]\d{3})\"", source))
    listed = {row[0] for row in mkdocs_hooks.check_rows()}
    assert raised == listed
    assert all(row[2] for row in mkdocs_hooks.check_rows())  # each has a message


def test_the_runjobs_reference_lists_every_argument():
    _, own, _ = mkdocs_hooks.runjobs_rows()
    options = " ".join(option for option, _ in own)
    for flag in ("--queue", "--concurrency", "--budget", "--shutdown-grace", "--burst"):
        assert flag in options
    assert all(text for _, text in own)

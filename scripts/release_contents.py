"""What scripts/check_release.sh checks inside the built distributions.

    python scripts/release_contents.py ROOT WHEEL SDIST

Prints one summary line and exits 0, or prints what is wrong and exits 1. Checks:
every file the package tracks in git (code, migrations, templates, static files,
``py.typed``) is in the wheel and the sdist; the sdist carries the licence, README and
changelog; the wheel's metadata has the one version (``dispatch_jobs.__version__``), the
MIT licence expression and its file, the supported Django and Python classifiers (each a
known trove classifier: PyPI refuses unknown ones at upload, twine does not check), the
project URLs and keywords.
"""

from __future__ import annotations

import ast
import subprocess
import sys
import tarfile
import zipfile
from email.message import Message
from email.parser import Parser
from pathlib import Path

from trove_classifiers import classifiers as KNOWN_CLASSIFIERS

PACKAGE = "dispatch_jobs"
REQUIRED_CLASSIFIERS = (
    "Framework :: Django :: 5.2",
    "Framework :: Django :: 6.0",
    "Programming Language :: Python :: 3.12",
    "Programming Language :: Python :: 3.13",
)
SDIST_EXTRAS = ("LICENSE", "README.md", "CHANGELOG.md", "PKG-INFO", "pyproject.toml")


def tracked_package_files(root: Path) -> list[str]:
    """The package's files as git tracks them (a fresh clone has nothing else)."""
    listing = subprocess.run(
        ["git", "-C", str(root), "ls-files", "--", PACKAGE],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    return sorted(listing)


def source_version(root: Path) -> str:
    """``__version__`` from the package's ``__init__``, read without importing it."""
    tree = ast.parse((root / PACKAGE / "__init__.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__version__" for t in node.targets
        ):
            return str(ast.literal_eval(node.value))
    raise SystemExit(f"no __version__ in {PACKAGE}/__init__.py")


def wheel_metadata(names: list[str], wheel: zipfile.ZipFile) -> Message:
    [path] = [n for n in names if n.endswith(".dist-info/METADATA")]
    return Parser().parsestr(wheel.read(path).decode())


def problems(root: Path, wheel_path: Path, sdist_path: Path) -> tuple[list[str], str]:
    found: list[str] = []
    tracked = tracked_package_files(root)
    migrations = [f for f in tracked if f.startswith(f"{PACKAGE}/migrations/")]
    templates = [f for f in tracked if f.startswith(f"{PACKAGE}/templates/")]
    static = [f for f in tracked if f.startswith(f"{PACKAGE}/static/")]
    if not migrations or not templates:
        found.append(f"git lists no migrations or templates under {root / PACKAGE}")

    with zipfile.ZipFile(wheel_path) as wheel:
        names = wheel.namelist()
        metadata = wheel_metadata(names, wheel)
    missing = [f for f in tracked if f not in names]
    if missing:
        found.append(f"the wheel lacks {len(missing)} tracked file(s): {', '.join(missing[:8])}")

    with tarfile.open(sdist_path) as sdist:
        members = sdist.getnames()
    prefix = members[0].split("/", 1)[0]
    in_sdist = {m.split("/", 1)[1] for m in members if "/" in m}
    lacking = [f for f in (*SDIST_EXTRAS, *tracked) if f not in in_sdist]
    if lacking:
        found.append(f"the sdist {prefix} lacks: {', '.join(lacking[:8])}")

    version = source_version(root)
    if metadata["Version"] != version:
        found.append(f"wheel version {metadata['Version']} != __version__ {version}")
    if metadata["License-Expression"] != "MIT":
        found.append(f"License-Expression is {metadata['License-Expression']!r}, not 'MIT'")
    if not any(n.endswith(".dist-info/licenses/LICENSE") for n in names):
        found.append("the wheel carries no LICENSE file")
    classifiers = metadata.get_all("Classifier") or []
    unknown = [c for c in classifiers if c not in KNOWN_CLASSIFIERS]
    if unknown:
        found.append(f"unknown trove classifiers (PyPI would refuse them): {unknown}")
    absent = [c for c in REQUIRED_CLASSIFIERS if c not in classifiers]
    if absent:
        found.append(f"classifiers missing: {absent}")
    for field in ("Requires-Python", "Keywords", "Project-URL", "Summary"):
        if not metadata.get(field):
            found.append(f"metadata has no {field}")

    summary = (
        f"{version}: sdist and wheel built, twine check --strict clean, "
        f"{len(tracked)} package files in both ({len(migrations)} migration files, "
        f"{len(templates)} templates, {len(static)} static files), {len(classifiers)} known "
        f"classifiers"
    )
    return found, summary


def main() -> int:
    root, wheel, sdist = (Path(arg) for arg in sys.argv[1:4])
    found, summary = problems(root, wheel, sdist)
    if found:
        print("; ".join(found))
        return 1
    print(summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())

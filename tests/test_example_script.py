"""``scripts/example.sh`` as a newcomer runs it: a user without root, in a fresh copy
of the repository, on a machine whose MariaDB headers it must never need.

It installs only the example's packages (no MySQLdb, no browser, no dev tools in
``.venv-example``) and never calls apt, sudo or pkg-config (shims on ``PATH``
record any call); it names its port, refuses a busy ``PORT`` in one line before
installing anything, and on Ctrl-C (SIGINT to its process group, as a terminal
sends it) drains the worker and leaves no process behind.

As root the test creates the user ``djexample`` and, when the suite's Python is
out of that user's reach (pyenv under /root), a readable copy of it.
"""

from __future__ import annotations

import os
import pwd
import re
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.db import connection

ROOT = Path(__file__).resolve().parents[1]
USER = "djexample"
SHIMS = ("apt", "apt-get", "sudo", "pkg-config", "mysql_config", "mariadb_config", "chromium")

pytestmark = [
    pytest.mark.slow,
    # One worker under pytest-xdist: both tests share the Python copy in the temporary
    # directory and the djexample user's processes (the leftovers check).
    pytest.mark.xdist_group("example_script"),
    pytest.mark.skipif(
        connection.vendor != "sqlite",
        reason="example.sh is the SQLite demo whatever the suite's database; run in the SQLite run",
    ),
]


class Newcomer:
    """Who runs the script (``djexample`` when the suite is root, else the suite's
    own user), in which copy of the repository, with which environment."""

    def __init__(self, base: Path) -> None:
        self.as_root = os.geteuid() == 0
        if self.as_root:
            _ensure_user()
        self.user = pwd.getpwnam(USER) if self.as_root else pwd.getpwuid(os.geteuid())
        self.clone = base / "clone"
        self.calls = base / "shim-calls.log"
        _copy_repository(self.clone)
        shims = base / "shims"
        shims.mkdir()
        for name in SHIMS:
            shim = shims / name
            shim.write_text(f'#!/bin/sh\necho "{name} $*" >> "{self.calls}"\nexit 1\n')
            shim.chmod(0o755)
        python = _python_for(self)
        self.env = {
            "HOME": self.user.pw_dir,
            "USER": self.user.pw_name,
            "LOGNAME": self.user.pw_name,
            "PATH": f"{shims}:/usr/local/bin:/usr/bin:/bin",
            "PYTHON": str(python),
            "LANG": "C.UTF-8",
            **{k: v for k, v in os.environ.items() if k.startswith("PIP_")},
        }
        libdir = python.parent.parent / "lib"
        if libdir.is_dir():
            self.env["LD_LIBRARY_PATH"] = str(libdir)  # a shared-libpython build
        if self.as_root:
            _chown_tree(base, self.user)

    def popen(self, *args: str, port: str = "", **kwargs: object) -> subprocess.Popen[str]:
        env = dict(self.env, **({"PORT": port} if port else {}))
        user = {"user": self.user.pw_uid, "group": self.user.pw_gid, "extra_groups": []}
        return subprocess.Popen(
            list(args),
            cwd=self.clone,
            env=env,
            text=True,
            **(user if self.as_root else {}),
            **kwargs,  # type: ignore[arg-type]
        )

    def run(self, *args: str, port: str = "", timeout: float = 120) -> tuple[int, str, str]:
        proc = self.popen(*args, port=port, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        out, err = proc.communicate(timeout=timeout)
        return proc.returncode, out, err


def _ensure_user() -> None:
    try:
        pwd.getpwnam(USER)
    except KeyError:
        subprocess.run(["useradd", "--create-home", "--shell", "/bin/bash", USER], check=True)


def _copy_repository(target: Path) -> None:
    """Tracked and untracked-but-not-ignored files: what a fresh clone holds."""
    listed = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard", "-z"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = ROOT / name
        if source.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)


def _python_for(newcomer: Newcomer) -> Path:
    """The suite's Python if the newcomer can run it, else a readable copy of it."""
    base = Path(sys.base_prefix)
    version = f"python{sysconfig.get_python_version()}"
    python = base / "bin" / version
    if not newcomer.as_root or _runs_as(newcomer, python):
        return python
    copy = Path(tempfile.gettempdir()) / f"dispatch-jobs-example-{base.name}-{version}"
    if not (copy / "bin" / version).exists():
        partial = copy.with_name(copy.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        shutil.copytree(
            base,
            partial,
            symlinks=True,
            ignore=shutil.ignore_patterns("test", "site-packages", "__pycache__", "idle_test"),
        )
        (partial / "lib" / version / "site-packages").mkdir(exist_ok=True)
        partial.chmod(0o755)
        partial.rename(copy)
    assert _runs_as(newcomer, copy / "bin" / version), f"{copy} does not run as {USER}"
    return copy / "bin" / version


def _runs_as(newcomer: Newcomer, python: Path) -> bool:
    env = {"PATH": "/usr/bin:/bin", "LD_LIBRARY_PATH": str(python.parent.parent / "lib")}
    try:
        done = subprocess.run(
            [str(python), "-c", "import venv, ensurepip"],
            user=newcomer.user.pw_uid,
            group=newcomer.user.pw_gid,
            extra_groups=[],
            env=env,
            cwd="/",
            capture_output=True,
            check=False,
        )
    except PermissionError:
        return False  # the user cannot reach it (pyenv under a 0700 /root)
    return done.returncode == 0


def _chown_tree(base: Path, user: pwd.struct_passwd) -> None:
    base.chmod(0o755)
    for path in [base, *base.rglob("*")]:
        os.lchown(path, user.pw_uid, user.pw_gid)


def _held_port() -> tuple[socket.socket, int]:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    return sock, sock.getsockname()[1]


def _free_port() -> int:
    sock, port = _held_port()
    sock.close()
    return port


@pytest.fixture
def newcomer() -> Iterator[Newcomer]:
    base = Path(tempfile.mkdtemp(prefix="dispatch-jobs-example-"))
    try:
        yield Newcomer(base)
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_a_busy_port_fails_in_one_line_before_installing(newcomer: Newcomer):
    sock, port = _held_port()
    with sock:
        code, out, err = newcomer.run("bash", "scripts/example.sh", port=str(port))
        assert code == 1
        assert err.strip().splitlines() == [
            f"port {port} on 127.0.0.1 is busy (PORT={port}): "
            "stop what uses it or choose another PORT."
        ]
        assert not (newcomer.clone / ".venv-example").exists()
        # Without PORT the default is replaced when busy, and the script says so.
        pick = f"source scripts/_env.sh; pick_port {port} no"
        code, out, err = newcomer.run("bash", "-c", pick)
        assert code == 0 and out.strip().isdigit() and int(out) != port
        assert f"port {port} on 127.0.0.1 is busy: using port {int(out)} instead" in err


def test_example_runs_as_a_newcomer_and_drains_on_ctrl_c(newcomer: Newcomer):
    port = _free_port()
    log_path = newcomer.clone.parent / "example.log"
    with open(log_path, "w") as log:
        script = newcomer.popen(
            "bash",
            "scripts/example.sh",
            port=str(port),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group, as in a terminal
        )
    try:
        ended = script.poll
        _wait(lambda: f"admin: http://127.0.0.1:{port}/admin/" in log_path.read_text(), 900, ended)
        _wait(lambda: _status(f"http://127.0.0.1:{port}/admin/login/") == 200, 120, ended)
        _wait(lambda: re.search(r"Job \d+ \S+ completed in", log_path.read_text()), 120, ended)
        # nightly_export runs for 45 s: Ctrl-C must drain it, not abandon it.
        os.killpg(script.pid, signal.SIGINT)
        assert script.wait(120) == 0, log_path.read_text()
    finally:
        if script.poll() is None:
            os.killpg(script.pid, signal.SIGKILL)
            script.wait(30)
    output = log_path.read_text()
    assert "==> installing dispatch_jobs with Django and django-environ" in output
    assert "Successfully installed" in output  # pip's own progress lines were shown
    assert "Stop requested (SIGTERM): draining." in output, output
    assert re.search(r"runjobs \S+ stopped: ", output), output
    assert output.rstrip().endswith("==> stopped"), output
    assert output.count("Stop requested") == 1  # one signal: the drain was not cut short
    # This copy's processes only: another suite on the machine may be running its own
    # example as the same user.
    leftovers = [
        pid
        for pid in subprocess.run(
            ["pgrep", "-u", str(newcomer.user.pw_uid), "-f", "manage.py"],
            capture_output=True,
            text=True,
            check=False,
        ).stdout.split()
        if _cwd(pid).is_relative_to(newcomer.clone)
    ]
    for pid in leftovers:
        os.kill(int(pid), signal.SIGKILL)
    assert leftovers == [], "example.sh left processes running"

    venv = newcomer.clone / ".venv-example"
    installed = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "list", "--format=freeze"],
        env=newcomer.env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.lower()
    for heavy in ("mysqlclient", "psycopg", "playwright", "ruff", "mypy", "pytest"):
        assert f"{heavy}==" not in installed, installed
    assert "django==" in installed and "django-environ==" in installed
    assert not list(venv.glob("lib/python*/site-packages/MySQLdb"))
    assert not newcomer.calls.exists(), newcomer.calls.read_text()


def _cwd(pid: str) -> Path:
    """The process's working directory; the root if it is gone or out of reach (an
    unreadable /proc entry is another user's, never the newcomer's when not root)."""
    try:
        return Path(os.readlink(f"/proc/{pid}/cwd"))
    except OSError:
        return Path("/")


def _wait(predicate, timeout: float, exited=None) -> None:
    """Wait for ``predicate``; fail at once when ``exited()`` (a Popen's poll)
    says the process it waits on has ended."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return
        if exited is not None and exited() is not None:
            raise AssertionError(f"the process ended (status {exited()}) before it was ready")
        time.sleep(0.5)
    raise AssertionError(f"timed out after {timeout}s")


def _status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return int(response.status)
    except OSError:
        return 0

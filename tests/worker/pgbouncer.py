"""A real PgBouncer in transaction mode between test processes and PostgreSQL."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any


def pgbouncer_binary() -> str | None:
    """Debian installs it in /usr/sbin, which is not on every user's PATH."""
    return shutil.which("pgbouncer") or shutil.which("pgbouncer", path="/usr/sbin:/usr/bin")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class PgBouncer:
    """``pgbouncer`` on a free loopback port with ``pool_mode = transaction``, in
    front of the PostgreSQL server ``target`` (Django ``settings_dict`` keys).

    Trust authentication for the target's user (the test server trusts loopback);
    a pool small enough that the LISTEN of one client and the queries of others
    really share server connections, as they do in production.
    """

    def __init__(self, target: dict[str, Any], pool_size: int = 4) -> None:
        binary = pgbouncer_binary()
        if binary is None:
            raise FileNotFoundError("pgbouncer is not installed")
        self.dbname = str(target["NAME"])
        self.user = str(target.get("USER") or "postgres")
        self.port = free_port()
        # Readable by the unprivileged user pgbouncer drops to when started as root.
        self.dir = Path(tempfile.mkdtemp(prefix="dj-pgbouncer-"))
        self.dir.chmod(0o755)
        host = target.get("HOST") or "127.0.0.1"
        server_port = target.get("PORT") or 5432
        (self.dir / "userlist.txt").write_text(f'"{self.user}" ""\n')
        (self.dir / "pgbouncer.ini").write_text(
            "[databases]\n"
            f"{self.dbname} = host={host} port={server_port} dbname={self.dbname}\n"
            "[pgbouncer]\n"
            "listen_addr = 127.0.0.1\n"
            f"listen_port = {self.port}\n"
            "unix_socket_dir =\n"
            "auth_type = trust\n"
            f"auth_file = {self.dir / 'userlist.txt'}\n"
            "pool_mode = transaction\n"
            f"default_pool_size = {pool_size}\n"
            "max_client_conn = 200\n"
            # Django's connection parameters that PgBouncer does not track.
            "ignore_startup_parameters = extra_float_digits,options\n"
        )
        for name in ("userlist.txt", "pgbouncer.ini"):
            (self.dir / name).chmod(0o644)
        self.log_path = self.dir / "pgbouncer.log"
        self._log = open(self.log_path, "wb")  # noqa: SIM115 - closed in stop()
        # PgBouncer refuses to run as root; -u drops to an unprivileged user.
        user = ["-u", "nobody"] if os.geteuid() == 0 else []
        self.proc = subprocess.Popen(
            [binary, *user, str(self.dir / "pgbouncer.ini")],
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )
        self._wait_ready()

    def _wait_ready(self, timeout: float = 30.0) -> None:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if self.proc.poll() is not None:
                raise RuntimeError(f"pgbouncer exited at start:\n{self.log()}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError(f"pgbouncer did not listen on {self.port}:\n{self.log()}")

    def url(self) -> str:
        """A DATABASE_URL through the pooler, for django-environ."""
        return f"postgres://{self.user}@127.0.0.1:{self.port}/{self.dbname}"

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)  # immediate shutdown
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(15)
        self._log.close()
        shutil.rmtree(self.dir, ignore_errors=True)

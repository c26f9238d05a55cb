"""The procrastinate app the bench's worker runs (``--app=bench.systems.procrastinate_app.app``).

The connection string comes from ``BENCH_PG_DSN``.
"""

from __future__ import annotations

import os

from procrastinate import App, PsycopgConnector

app = App(connector=PsycopgConnector(conninfo=os.environ.get("BENCH_PG_DSN", "")))


@app.task(name="noop", queue="default")
async def noop() -> None:
    """Do nothing: the bench measures the queue, not the job."""

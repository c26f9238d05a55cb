"""The benchmark harness: dispatch_jobs side by side with its peers.

``bench/run.sh`` (or ``python bench/run.py``) is the entry point. The
orchestrator (``run.py``, ``envs.py``, ``report.py``) uses only the standard
library; the drivers (``driver.py``, ``systems/``) run inside each system's own
virtual environment under ``bench/.venvs/``.
"""

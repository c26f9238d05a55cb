"""Micro-benchmark: encode_arguments (the per-call argument checks) for a few payload shapes."""
import sys, timeit
from bench.hotpath import setup

noop = setup("sqlite:////tmp/boundary_tools/walk.sqlite3")
from dispatch_jobs.validation import encode_arguments

shapes = {
    "one int": ((7,), {}),
    "small dict": (({"user_id": 12, "email": "ada@example.com", "tags": ["a", "b", "c"], "ratio": 0.5},), {}),
    "unicode text 2KB": (("é" * 2000,), {}),
    "list of 1000 dicts": (([{"id": i, "name": f"row {i}", "ok": True} for i in range(1000)],), {}),
}
for label, (args, kwargs) in shapes.items():
    n = 5000 if label != "list of 1000 dicts" else 200
    best = min(timeit.repeat(lambda: encode_arguments(noop, args, kwargs), number=n, repeat=15))
    print(f"{label:22s} {best / n * 1e6:9.2f} µs/call")

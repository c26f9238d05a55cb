"""Enqueue inside one transaction: with the savepoint around each INSERT, and without."""
import sys, time, contextlib
from bench.hotpath import setup
noop = setup(sys.argv[1])
from django.db import transaction
from dispatch_jobs.store import enqueue as e
from dispatch_jobs.models import Job
real = e._savepoint
def run(n, label):
    Job.objects.all().delete()
    t, c = time.perf_counter(), time.process_time()
    with transaction.atomic():
        for i in range(n):
            noop.enqueue(i)
    return (time.perf_counter() - t) / n * 1e6, (time.process_time() - c) / n * 1e6
res = {"savepoint": [], "none": []}
for rep in range(5):
    e._savepoint = real
    res["savepoint"].append(run(2000, "sp"))
    e._savepoint = lambda alias: contextlib.nullcontext()
    res["none"].append(run(2000, "none"))
for k, v in res.items():
    v.sort()
    print(f"{k:10s} median wall {v[2][0]:.0f} µs/job  cpu {sorted(x[1] for x in v)[2]:.0f} µs/job   all wall: {[round(x[0]) for x in v]}")

"""The worker's input cache: staged from the filesystem storage, verified against
the hash while streaming, one download per hash across threads, LRU eviction by
bytes that never removes a pinned file."""

from __future__ import annotations

import hashlib
import threading
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.core.files.storage import storages

from dispatch_jobs import artifacts, inputs
from dispatch_jobs.exceptions import ArtifactCorrupt, StagingFailed
from dispatch_jobs.worker.staging import ArtifactCache
from tests.artifacts.storage import GatedStorage
from tests.worker.processes import wait_until

pytestmark = pytest.mark.django_db


def ref(data: bytes, media_type: str = "application/octet-stream", storage: str = "default"):
    return inputs.ref_of(artifacts.register(data, media_type=media_type, storage=storage))


def cached_files(cache: ArtifactCache) -> set[str]:
    return {p.name for p in cache.directory.iterdir() if p.is_file()}


@pytest.fixture
def gated(settings, tmp_path):
    settings.STORAGES = {
        **django_settings.STORAGES,
        "gated": {
            "BACKEND": "tests.artifacts.storage.GatedStorage",
            "OPTIONS": {"location": str(tmp_path / "gated")},
        },
    }
    GatedStorage.reset()
    return GatedStorage


def test_staged_inputs_are_local_files_with_the_bytes(tmp_path):
    cache = ArtifactCache(tmp_path / "cache", 10_000)
    video = ref(b"frames" * 100, "video/mp4")
    with cache.staged({"video": video}) as staged:
        item = staged["video"]
        assert item.path == tmp_path / "cache" / video["hash"]
        assert item.path.read_bytes() == b"frames" * 100
        assert (item.size, item.media_type, item.content_hash) == (600, "video/mp4", video["hash"])
        assert cache.pins(video["hash"]) == 1
    assert cache.pins(video["hash"]) == 0
    assert (cache.downloads, cache.hits, cache.used) == (1, 0, 600)
    with cache.staged({"again": video}):
        pass
    assert (cache.downloads, cache.hits) == (1, 1)


def test_bytes_that_do_not_match_the_hash_are_refused(tmp_path):
    cache = ArtifactCache(tmp_path / "cache", 10_000)
    good = ref(b"the real bytes")
    # Someone changed the stored bytes behind the row's back.
    Path(storages["default"].path(good["path"])).write_bytes(b"tampered bytes")
    with (
        pytest.raises(ArtifactCorrupt, match=f"hashes to .*, not {good['hash']}: refused"),
        cache.staged({"data": good}),
    ):
        pass
    assert cached_files(cache) == set()  # no partial file, nothing under the hash
    assert good["hash"] not in cache and cache.used == 0


def test_a_missing_stored_file_fails_staging(tmp_path):
    cache = ArtifactCache(tmp_path / "cache", 10_000)
    gone = ref(b"soon gone")
    storages["default"].delete(gone["path"])
    with pytest.raises(StagingFailed, match="could not be read"), cache.staged({"data": gone}):
        pass
    assert cached_files(cache) == set()


def test_a_failed_input_unpins_the_ones_staged_before_it(tmp_path):
    cache = ArtifactCache(tmp_path / "cache", 10_000)
    first, broken = ref(b"first"), ref(b"broken")
    storages["default"].delete(broken["path"])
    with pytest.raises(StagingFailed), cache.staged({"a": first, "b": broken}):
        pass
    assert cache.pins(first["hash"]) == 0


def test_one_download_per_hash_across_threads(tmp_path, gated):
    data = b"shared input" * 1000
    shared = ref(data, storage="gated")
    gated.reset()
    gated.gate.clear()  # the first download waits at the gate
    cache = ArtifactCache(tmp_path / "cache", 1_000_000)
    paths: list[Path] = []
    errors: list[BaseException] = []

    def stage() -> None:
        try:
            paths.append(cache.acquire(shared))
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=stage) for _ in range(8)]
    for thread in threads:
        thread.start()
    # Every thread is in: one holds the download (at the gate), seven wait on it.
    wait_until(lambda: gated.opens == 1, what="the first download")
    wait_until(
        lambda: (
            cache._flights.get(shared["hash"]) is not None
            and cache._flights[shared["hash"]].wanted == 8
        ),
        what="eight threads wanting the one hash",
    )
    gated.gate.set()
    for thread in threads:
        thread.join(60)
    assert errors == []
    assert gated.opens == 1
    assert cache.downloads == 1 and cache.hits == 7
    assert set(paths) == {cache.path_of(shared["hash"])}
    assert cache.pins(shared["hash"]) == 8
    assert hashlib.sha256(paths[0].read_bytes()).hexdigest() == shared["hash"]


def test_lru_eviction_by_bytes_skips_pinned_files(tmp_path):
    cache = ArtifactCache(tmp_path / "cache", 250)
    a, b, c, d = (ref(bytes([n]) * 100) for n in range(4))
    cache.acquire(a)  # pinned throughout: the oldest, and never evicted
    cache.acquire(b)
    cache.release(b["hash"])
    cache.acquire(c)  # 300 bytes > 250: the oldest unpinned (b) goes
    assert a["hash"] in cache and b["hash"] not in cache and c["hash"] in cache
    assert not cache.path_of(b["hash"]).exists()
    assert cache.path_of(a["hash"]).exists()
    # Everything pinned: the cache stays over its size rather than remove one...
    cache.acquire(d)
    assert cache.used == 300 and {a["hash"], c["hash"], d["hash"]} <= cached_files(cache)
    # ...and evicts down as soon as a pin is released.
    cache.release(c["hash"])
    assert c["hash"] not in cache and cache.used == 200
    assert cache.evicted == 2


def test_least_recently_used_goes_first(tmp_path):
    cache = ArtifactCache(tmp_path / "cache", 200)
    a, b, c = (ref(bytes([n]) * 100) for n in range(3))
    for item in (a, b):
        cache.acquire(item)
        cache.release(item["hash"])
    cache.acquire(a)  # a is now the most recent
    cache.release(a["hash"])
    cache.acquire(c)
    assert a["hash"] in cache and b["hash"] not in cache


def test_a_restarted_worker_adopts_its_files(tmp_path):
    first = ArtifactCache(tmp_path / "cache", 10_000)
    kept = ref(b"kept")
    first.acquire(kept)
    (tmp_path / "cache" / ".partial-abc").write_bytes(b"half")
    second = ArtifactCache(tmp_path / "cache", 10_000)
    assert kept["hash"] in second and second.used == 4
    assert not (tmp_path / "cache" / ".partial-abc").exists()


def test_preferred_hashes_largest_first_and_bounded(tmp_path):
    cache = ArtifactCache(tmp_path / "cache", 10_000)
    small, large, middle = ref(b"s"), ref(b"l" * 300), ref(b"m" * 20)
    for item in (small, large, middle):
        cache.acquire(item)
    assert cache.preferred_hashes() == [large["hash"], middle["hash"], small["hash"]]
    assert cache.preferred_hashes(most=2) == [large["hash"], middle["hash"]]


def test_a_binding_without_a_hash_fails_staging(tmp_path):
    cache = ArtifactCache(tmp_path / "cache", 10_000)
    with (
        pytest.raises(StagingFailed, match="input 'x' has no valid sha256"),
        cache.staged({"x": {"path": "p", "storage": "default", "size": 1}}),
    ):
        pass

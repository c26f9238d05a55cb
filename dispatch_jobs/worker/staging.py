"""Staging: a job's declared inputs copied into the worker's cache before its
handler runs, and read by the handler as local paths (``context.inputs``).

The cache is a directory of files named by their sha256 (content-addressed),
one directory per worker process (``ARTIFACT_CACHE_DIR``), at most
``ARTIFACT_CACHE_BYTES`` of them:

- **Verified while streaming.** A download is hashed as it is written to a
  temporary file in the directory, and only renamed to its hash's name when the
  hash matches; a mismatch is refused (``ArtifactCorrupt``) and leaves nothing
  behind. A file under a hash's name is therefore always those bytes.
- **Single flight.** One download per hash at a time: the threads of this worker
  that want the same hash wait on one lock and all use the one download. Across
  processes sharing the directory an ``flock`` on the hash's lock file does the
  same (a subprocess executor stages in the worker, before it launches the child,
  so children never download; the lock only matters for directories shared by
  mistake or by design).
- **LRU by bytes, pins first.** Past the capacity, the least recently used files
  go, never one a running job has pinned; a job pins its inputs from staging until
  its handler returns. Pinned files may hold the cache over its size for a while;
  the next release evicts down again.
- **Locality.** ``preferred_hashes`` offers the cached hashes to each claim (the
  seed's ``PreferHashes``), so jobs whose primary input is here sort first within
  their priority band.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import re
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..conf import settings
from ..exceptions import ArtifactCorrupt, StagingFailed

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: threads of one process only
    fcntl = None  # type: ignore[assignment]

logger = logging.getLogger("dispatch_jobs.worker")

CHUNK = 1024 * 1024
# The most hashes one claim offers. The claim binds them as an IN list: a few
# hundred cost nothing to send or match, and a worker rarely holds more inputs
# worth preferring than it can run soon. The largest files come first, since a
# hit on them saves the most bytes.
PREFER_HASHES_MAX = 200
_HASH = re.compile(r"^[0-9a-f]{64}$")
_TEMP_PREFIX = ".partial-"


@dataclass(frozen=True, slots=True)
class StagedInput:
    """One input as the handler sees it: a local, read-only-by-convention file."""

    name: str
    path: Path
    content_hash: str
    size: int
    media_type: str


@dataclass(slots=True)
class _Entry:
    size: int
    pins: int = 0


class _Flight:
    """The download of one hash: its lock, and how many threads want it."""

    __slots__ = ("lock", "wanted")

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.wanted = 0


class ArtifactCache:
    """A worker's content-addressed input cache. Thread-safe."""

    def __init__(self, directory: Path | str, capacity: int) -> None:
        self.directory = Path(directory)
        self.capacity = capacity
        self._lock = threading.Lock()  # guards everything below
        self._entries: OrderedDict[str, _Entry] = OrderedDict()  # least recent first
        self._flights: dict[str, _Flight] = {}
        self.used = 0
        self.hits = 0  # inputs found here, or downloaded by another thread meanwhile
        self.downloads = 0  # inputs fetched from their storage
        self.evicted = 0
        # The offer, kept until a file comes or goes: a claim asks for it every cycle.
        self._offer: tuple[int, list[str]] | None = None
        if self.directory.is_dir():  # made on the first download, not by every worker
            self._scan()

    @classmethod
    def from_settings(cls, worker_id: str) -> ArtifactCache:
        directory = settings.artifact_cache_dir
        if not directory:
            safe = re.sub(r"[^A-Za-z0-9_.-]", "_", worker_id) or "worker"
            directory = os.path.join(tempfile.gettempdir(), "dispatch_jobs-inputs", safe)
        return cls(directory, settings.artifact_cache_bytes)

    # --- what a job does

    @contextlib.contextmanager
    def staged(self, bindings: Mapping[str, Mapping[str, Any]]) -> Iterator[dict[str, StagedInput]]:
        """Stage every bound input, pinned until the block ends. Raises
        ``StagingFailed`` (nothing stays pinned)."""
        pinned: list[str] = []
        try:
            inputs: dict[str, StagedInput] = {}
            for name, ref in bindings.items():
                content_hash = _hash_of(name, ref)
                path = self.acquire(ref)
                pinned.append(content_hash)
                inputs[name] = StagedInput(
                    name, path, content_hash, int(ref["size"]), str(ref.get("media_type", ""))
                )
            yield inputs
        finally:
            for content_hash in pinned:
                self.release(content_hash)

    def acquire(self, ref: Mapping[str, Any]) -> Path:
        """The local path of ``ref``'s bytes, pinned (``release`` unpins),
        downloading them first unless they are here."""
        content_hash = _hash_of("", ref)
        with self._lock:
            if self._pin(content_hash):
                self.hits += 1
                return self.path_of(content_hash)
            flight = self._flights.setdefault(content_hash, _Flight())
            flight.wanted += 1
        try:
            with flight.lock:
                with self._lock:
                    if self._pin(content_hash):
                        self.hits += 1  # another thread downloaded it meanwhile
                        return self.path_of(content_hash)
                size = self._fetch(content_hash, ref)
                with self._lock:
                    self._entries[content_hash] = _Entry(size, pins=1)
                    self._offer = None
                    self.used += size
                    self.downloads += 1
                    self._evict()
                return self.path_of(content_hash)
        finally:
            with self._lock:
                flight.wanted -= 1
                if not flight.wanted:
                    del self._flights[content_hash]

    def release(self, content_hash: str) -> None:
        with self._lock:
            entry = self._entries.get(content_hash)
            if entry is not None and entry.pins:
                entry.pins -= 1
            self._evict()

    # --- what the fetcher offers

    def preferred_hashes(self, most: int = PREFER_HASHES_MAX) -> list[str]:
        """Up to ``most`` cached hashes, the most valuable first: the largest files
        (a hit saves their download), then the most recently used (as of the last
        time a file came or went: the ranking is kept until then)."""
        with self._lock:
            if self._offer is None or self._offer[0] != most:
                recent = list(reversed(self._entries.items()))
                ranked = sorted(recent, key=lambda item: -item[1].size)  # recency breaks ties
                self._offer = (most, [content_hash for content_hash, _ in ranked[:most]])
            return list(self._offer[1])

    def path_of(self, content_hash: str) -> Path:
        return self.directory / content_hash

    def __contains__(self, content_hash: object) -> bool:
        with self._lock:
            return content_hash in self._entries

    def pins(self, content_hash: str) -> int:
        with self._lock:
            entry = self._entries.get(content_hash)
            return entry.pins if entry else 0

    # --- inside

    def _pin(self, content_hash: str) -> bool:
        entry = self._entries.get(content_hash)
        if entry is None:
            return False
        entry.pins += 1
        self._entries.move_to_end(content_hash)
        return True

    def _evict(self) -> None:
        """Remove least recently used, unpinned files until under capacity (the
        lock is held)."""
        for content_hash in list(self._entries):
            if self.used <= self.capacity:
                return
            entry = self._entries[content_hash]
            if entry.pins:
                continue
            del self._entries[content_hash]
            self._offer = None
            self.used -= entry.size
            self.evicted += 1
            with contextlib.suppress(FileNotFoundError):
                self.path_of(content_hash).unlink()

    def _fetch(self, content_hash: str, ref: Mapping[str, Any]) -> int:
        """Download ``ref`` to its hash's name, verified; its size. Another process
        sharing the directory may have put it there first: then it is used."""
        final = self.path_of(content_hash)
        self.directory.mkdir(parents=True, exist_ok=True)
        with self._process_lock(content_hash):
            if final.exists():
                return final.stat().st_size
            handle = tempfile.NamedTemporaryFile(  # noqa: SIM115 - renamed or removed below
                dir=self.directory, prefix=_TEMP_PREFIX, delete=False
            )
            try:
                with handle:
                    digest, size = _download(ref, handle)
                if digest != content_hash:
                    raise ArtifactCorrupt(
                        f"Artifact {ref.get('artifact')} at {ref.get('path')!r} in storage "
                        f"{ref.get('storage')!r} hashes to {digest}, not {content_hash}: "
                        "refused."
                    )
                os.replace(handle.name, final)
            except BaseException:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(handle.name)
                raise
        return size

    @contextlib.contextmanager
    def _process_lock(self, content_hash: str) -> Iterator[None]:
        if fcntl is None:
            yield
            return
        locks = self.directory / ".locks"
        locks.mkdir(exist_ok=True)
        with open(locks / content_hash, "a") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def _scan(self) -> None:
        """Adopt the files a previous run left (their names are their verified
        hashes), oldest first; remove unfinished downloads."""
        found = []
        for path in self.directory.iterdir():
            if path.name.startswith(_TEMP_PREFIX):
                with contextlib.suppress(OSError):
                    path.unlink()
            elif _HASH.match(path.name) and path.is_file():
                stat = path.stat()
                found.append((stat.st_mtime, path.name, stat.st_size))
        for _, content_hash, size in sorted(found):
            self._entries[content_hash] = _Entry(size)
            self.used += size
        self._evict()


def _hash_of(name: str, ref: Mapping[str, Any]) -> str:
    content_hash = ref.get("hash") if isinstance(ref, Mapping) else None
    if not isinstance(content_hash, str) or not _HASH.match(content_hash):
        label = f"input {name!r}" if name else "an input"
        raise StagingFailed(f"The binding of {label} has no valid sha256: {ref!r}.")
    return content_hash


def _download(ref: Mapping[str, Any], handle: Any) -> tuple[str, int]:
    """Stream ``ref``'s bytes from its storage into ``handle``, hashing them."""
    from django.core.files.storage import storages

    digest, size = hashlib.sha256(), 0
    try:
        with storages[ref["storage"]].open(ref["path"], "rb") as source:
            while chunk := source.read(CHUNK):
                digest.update(chunk)
                handle.write(chunk)
                size += len(chunk)
    except StagingFailed:
        raise
    except Exception as exc:  # noqa: BLE001 - any storage failure fails staging alone
        raise StagingFailed(
            f"Artifact {ref.get('artifact')} at {ref.get('path')!r} in storage "
            f"{ref.get('storage')!r} could not be read: {type(exc).__name__}: {exc}"
        ) from exc
    return digest.hexdigest(), size


_process_cache: ArtifactCache | None = None
_process_cache_lock = threading.Lock()


def process_cache(worker_id: str = "inline") -> ArtifactCache:
    """This process's cache, made from the settings on first use (the inline
    runner's; a ``runjobs`` pool makes its own)."""
    global _process_cache
    with _process_cache_lock:
        if _process_cache is None:
            _process_cache = ArtifactCache.from_settings(worker_id)
        return _process_cache

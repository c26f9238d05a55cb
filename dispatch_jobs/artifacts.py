"""Registering bytes as an artifact a job can take as an input.

::

    from dispatch_jobs import artifacts

    video = artifacts.register(upload, media_type="video/mp4")
    transcode.using(inputs={"video": video}).enqueue(preset="720p")

The bytes go to a Django storage (``DISPATCH_JOBS["ARTIFACT_STORAGE"]``, an alias
in ``STORAGES``) under a name derived from their sha256, so the same bytes
registered twice are stored once; the row (``models.Artifact``) says where they
are and what they are. Workers stage them into a local cache before the handler
runs (``dispatch_jobs.worker.staging``) and check them against the hash there.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO, TYPE_CHECKING

from django.core.files import File

from .conf import settings
from .exceptions import InvalidArtifact
from .limits import short_repr

if TYPE_CHECKING:
    from .models import Artifact

CHUNK = 1024 * 1024
# Bytes kept in memory while hashing before the copy spills to a temporary file.
SPOOL_BYTES = 8 * 1024 * 1024
MEDIA_TYPE_MAX = 255
_MEDIA_TYPE = re.compile(r"^[\w.+-]+/[\w.+-]+$")
PREFIX = "dispatch_jobs/artifacts"


def storage_name(content_hash: str) -> str:
    """Where an artifact's bytes live in its storage: named by their hash."""
    return f"{PREFIX}/{content_hash[:2]}/{content_hash}"


def register(
    source: bytes | str | os.PathLike[str] | IO[bytes],
    *,
    media_type: str = "application/octet-stream",
    storage: str | None = None,
) -> Artifact:
    """Store ``source`` (bytes, a file's path, or a binary file object read from
    its current position) as an artifact and return its row.

    One pass over the source hashes it while copying it aside (in memory up to
    ``SPOOL_BYTES``, then in a temporary file); the copy is written to the
    storage under its hash's name unless bytes of that hash are there already.
    """
    from django.core.files.storage import InvalidStorageError, storages

    from . import store

    if not isinstance(media_type, str) or not _MEDIA_TYPE.match(media_type):
        raise InvalidArtifact(
            f"media_type must be 'type/subtype', got {short_repr(media_type)}; nothing stored."
        )
    if len(media_type) > MEDIA_TYPE_MAX:
        raise InvalidArtifact(f"media_type is longer than {MEDIA_TYPE_MAX} characters.")
    alias = storage or settings.artifact_storage
    try:
        backend = storages[alias]
    except InvalidStorageError as exc:
        raise InvalidArtifact(f"Storage {alias!r} is not an alias in STORAGES.") from exc
    with _opened(source) as readable, tempfile.SpooledTemporaryFile(SPOOL_BYTES) as copy:
        digest, size = hashlib.sha256(), 0
        while chunk := readable.read(CHUNK):
            if not isinstance(chunk, bytes):
                raise InvalidArtifact("register() needs a binary file (opened 'rb').")
            digest.update(chunk)
            copy.write(chunk)
            size += len(chunk)
        content_hash = digest.hexdigest()
        name = storage_name(content_hash)
        if not backend.exists(name):
            copy.seek(0)
            # The storage may pick another name (two registrations racing): the
            # row records the name it actually wrote.
            name = backend.save(name, File(copy, name=content_hash))
    return store.record_artifact(
        content_hash=content_hash, size=size, media_type=media_type, storage=alias, path=name
    )


@contextmanager
def _opened(source: object) -> Iterator[IO[bytes]]:
    if isinstance(source, bytes | bytearray | memoryview):
        import io

        yield io.BytesIO(bytes(source))
    elif isinstance(source, str | os.PathLike):
        try:
            handle = open(source, "rb")  # noqa: SIM115 - closed below
        except OSError as exc:
            raise InvalidArtifact(f"Cannot read {os.fspath(source)!r}: {exc}.") from exc
        with handle:
            yield handle
    elif hasattr(source, "read"):
        yield source  # type: ignore[misc]
    else:
        raise InvalidArtifact(
            f"register() takes bytes, a path or a binary file, got {type(source).__name__}."
        )

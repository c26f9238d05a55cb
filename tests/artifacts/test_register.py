"""artifacts.register: bytes, a path or a file, hashed while copied, stored once
under their hash's name in the configured storage."""

from __future__ import annotations

import hashlib
import io

import pytest
from django.core.files.storage import storages

from dispatch_jobs import artifacts
from dispatch_jobs.exceptions import InvalidArtifact
from dispatch_jobs.models import Artifact

pytestmark = pytest.mark.django_db


def test_bytes_become_a_row_and_a_stored_file():
    data = b"frames" * 1000
    artifact = artifacts.register(data, media_type="video/mp4")
    assert artifact.content_hash == hashlib.sha256(data).hexdigest()
    assert (artifact.size, artifact.media_type, artifact.storage) == (6000, "video/mp4", "default")
    assert artifact.path == artifacts.storage_name(artifact.content_hash)
    assert artifact.created_at is not None
    with storages["default"].open(artifact.path, "rb") as handle:
        assert handle.read() == data


def test_same_bytes_are_stored_once(tmp_path):
    first = artifacts.register(b"same")
    source = tmp_path / "same.bin"
    source.write_bytes(b"same")
    second = artifacts.register(source)
    third = artifacts.register(io.BytesIO(b"same"))
    assert first.path == second.path == third.path
    assert Artifact.objects.filter(content_hash=first.content_hash).count() == 3


def test_larger_than_the_spool(monkeypatch):
    monkeypatch.setattr(artifacts, "SPOOL_BYTES", 10)
    monkeypatch.setattr(artifacts, "CHUNK", 7)
    data = bytes(range(256)) * 3
    artifact = artifacts.register(data)
    with storages["default"].open(artifact.path, "rb") as handle:
        assert handle.read() == data
    assert artifact.size == len(data)


@pytest.mark.parametrize(
    ("source", "kwargs", "fragment"),
    [
        (b"x", {"media_type": "video"}, "media_type must be 'type/subtype'"),
        (b"x", {"storage": "nowhere"}, "Storage 'nowhere' is not an alias in STORAGES"),
        ("/no/such/file", {}, "Cannot read '/no/such/file'"),
        (io.StringIO("text"), {}, "needs a binary file"),
        (42, {}, "takes bytes, a path or a binary file, got int"),
    ],
)
def test_refused(source, kwargs, fragment):
    with pytest.raises(InvalidArtifact, match=fragment):
        artifacts.register(source, **kwargs)
    assert not Artifact.objects.exists()

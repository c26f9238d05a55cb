"""Signed paging cursors: round trip, and every way a cursor can be refused."""

from __future__ import annotations

import pytest
from django.test import override_settings

from dispatch_jobs.cursor import decode_cursor, encode_cursor
from dispatch_jobs.exceptions import InvalidCursor


def test_round_trip() -> None:
    assert decode_cursor(encode_cursor([42, "x"], "list"), "list") == [42, "x"]


def test_cursor_is_opaque_text() -> None:
    cursor = encode_cursor([42], "list")
    assert cursor.count(".") == 1 and " " not in cursor


def test_other_salt_is_refused() -> None:
    with pytest.raises(InvalidCursor, match="signature"):
        decode_cursor(encode_cursor([42], "list"), "other")


def test_other_secret_key_is_refused() -> None:
    with override_settings(SECRET_KEY="another-project"):
        cursor = encode_cursor([42], "list")
    with pytest.raises(InvalidCursor, match="signature"):
        decode_cursor(cursor, "list")


def test_tampered_body_is_refused() -> None:
    body, mac = encode_cursor([42], "list").split(".")
    other_body = encode_cursor([43], "list").split(".")[0]
    with pytest.raises(InvalidCursor, match="signature"):
        decode_cursor(f"{other_body}.{mac}", "list")


@pytest.mark.parametrize("cursor", ["", "abc", "a.b.c", "...", 42])
def test_malformed_is_refused(cursor: object) -> None:
    with pytest.raises(InvalidCursor):
        decode_cursor(cursor, "list")  # type: ignore[arg-type]


def test_signed_garbage_body_is_refused() -> None:
    """A correctly signed body that is not base64 JSON still fails cleanly."""
    from dispatch_jobs.cursor import _mac

    for body in ("!!!!", "e30", "bm90IGpzb24"):  # not b64, {} (not a list), "not json"
        with pytest.raises(InvalidCursor):
            decode_cursor(f"{body}.{_mac(body, 'list')}", "list")

"""Opaque, signed paging cursors.

A cursor carries the position of the last row of a page. It is signed with the
project's SECRET_KEY and a per-list salt, so a value a client made up, or one
issued by a different list, is refused (``InvalidCursor``) instead of silently
becoming some other page.
"""

from __future__ import annotations

import base64
import json
from typing import Any

from django.utils.crypto import constant_time_compare, salted_hmac

from .exceptions import InvalidCursor

_MAC_LENGTH = 16


def _mac(body: str, salt: str) -> str:
    mac = salted_hmac(f"dispatch_jobs.cursor.{salt}", body, algorithm="sha256")
    return mac.hexdigest()[:_MAC_LENGTH]


def encode_cursor(position: list[Any], salt: str) -> str:
    body = (
        base64.urlsafe_b64encode(json.dumps(position, separators=(",", ":")).encode())
        .decode()
        .rstrip("=")
    )
    return f"{body}.{_mac(body, salt)}"


def decode_cursor(cursor: str, salt: str) -> list[Any]:
    if not isinstance(cursor, str) or cursor.count(".") != 1:
        raise InvalidCursor(str(cursor), "not a cursor issued by dispatch_jobs")
    body, mac = cursor.split(".")
    if not constant_time_compare(mac, _mac(body, salt)):
        raise InvalidCursor(cursor, "its signature does not match this list")
    try:
        padded = body + "=" * (-len(body) % 4)
        position = json.loads(base64.urlsafe_b64decode(padded.encode()))
    except ValueError as exc:
        raise InvalidCursor(cursor, "it cannot be decoded") from exc
    if not isinstance(position, list):
        raise InvalidCursor(cursor, "it does not hold a position")
    return position

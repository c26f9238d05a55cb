"""A job's payload as stored: the compact JSON text the payload cap measures,
encoded once and carried beside its value (``EncodedJSON``) to the INSERT.

No models here: enqueue validation imports this when the tasks backend loads,
which can be before the app registry is ready. The store re-exports all of it.
"""

from __future__ import annotations

import json
from typing import Any

from .exceptions import InvalidJob


class EncodedJSON:
    """A JSON column's value together with its encoding, so it is encoded once:
    the payload cap measures ``text`` and the PostgreSQL INSERT sends it as is;
    the ORM path stores ``value``. The text differs from Django's encoding in
    spacing and escapes only (compact, UTF-8 as is): jsonb stores the same."""

    __slots__ = ("text", "value")

    def __init__(self, value: object, text: str) -> None:
        self.value = value
        self.text = text


# The encoding the payload cap measures: compact, non-ASCII kept as UTF-8. NaN and
# Infinity are refused: no database's JSON column accepts them.
_COMPACT = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False)
# The same encoding, made once: JSONEncoder.encode() builds its C encoder at every
# call, which costs more than encoding a small payload. It checks no cycles (a
# circular value ends in RecursionError, reported below): the enqueue paths walk
# every value first (``storable.locate_unstorable``), which refuses them.
_MAKE_ENCODER: Any = getattr(json.encoder, "c_make_encoder", None)  # not in the stubs
_ENCODE = (
    _MAKE_ENCODER(
        None, _COMPACT.default, json.encoder.encode_basestring, None, ":", ",", False, False, False
    )
    if _MAKE_ENCODER is not None
    else None
)


def encode_payload(name: str, payload: object) -> str:
    """The payload as the compact JSON text the cap measures; refuses anything
    that is not JSON. ``name`` is the job's, for the error."""
    try:
        if _ENCODE is None:
            return _COMPACT.encode(payload)
        return "".join(_ENCODE(payload, 0))
    except (TypeError, ValueError) as exc:
        raise InvalidJob(f"Payload of {name!r} is not JSON-serialisable: {exc}") from exc
    except RecursionError as exc:
        raise InvalidJob(f"Payload of {name!r} is nested too deeply or circular.") from exc


def encoded_size(text: str) -> int:
    """Bytes of ``text`` in UTF-8 (ASCII text is counted without encoding it)."""
    return len(text) if text.isascii() else len(text.encode())


def payload_size(name: str, payload: object) -> int:
    """The payload's encoded size in bytes; refuses anything that is not JSON."""
    return encoded_size(encode_payload(name, payload))

"""How every JSON column of these tables is read back.

A database stores JSON nested deeper than Python's decoder can follow: PostgreSQL
keeps ``jsonb`` some 10,000 levels deep, where ``json.loads`` gives up after a
few thousand (or about a thousand, on Python 3.12) with ``RecursionError``. Such a
row may come from anywhere (raw SQL, another program, an older release), and one
of them must not sink what reads it beside others: a worker's claim of hundreds
of rows, the admin's pages, a result lookup.

``StoredJSONDecoder`` turns that failure into the one Django's ``JSONField``
already answers for text that is not JSON: the value is returned as the stored
text. The worker then fails that job alone, naming the column (``problem_with``),
and the admin shows the text.
"""

from __future__ import annotations

import json
from typing import Any


class StoredJSONDecoder(json.JSONDecoder):
    """``json.JSONDecoder``, but a value nested too deeply to decode is not JSON to
    it (``JSONDecodeError``) rather than a ``RecursionError`` for the caller."""

    def decode(self, s: str, *args: Any, **kwargs: Any) -> Any:
        try:
            return super().decode(s, *args, **kwargs)
        except RecursionError:
            raise json.JSONDecodeError(
                "nested deeper than Python's decoder follows", s, 0
            ) from None


def read_stored(text: str) -> Any:
    """Stored JSON text decoded as a ``JSONField`` decodes it: the text itself when
    it is not JSON this process can read."""
    try:
        return json.loads(text, cls=StoredJSONDecoder)
    except json.JSONDecodeError:
        return text

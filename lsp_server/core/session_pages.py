"""Session listings in pages: ACP's ``cursor`` and ``nextCursor``, for both hosts.

A store holds more sessions than one answer should carry, and the listing (ACP's
``session/list``, kiln lsp's ``kiln/session/list``) stopped at the 50 newest with nothing to say
that more existed, so older sessions could not be found or loaded from a client's history. Each page now ends with a ``nextCursor`` when more follow; the cursor,
opaque to the client, names the last session of the page (its update time and id), so the next
page starts after it even while sessions are added or continued meanwhile (those move to the
top; none is listed twice).
"""

from __future__ import annotations

import base64
import binascii
import json
import math

from lsp_server.core import InvalidParams

PAGE_SIZE = 50


def cursor_for(key: tuple[float, str] | None) -> str | None:
    """The ``nextCursor`` of a page whose last session has ``key``; None when none follow."""
    if key is None:
        return None
    raw = json.dumps([key[0], key[1]], separators=(",", ":")).encode("utf-8")
    return base64.urlsafe_b64encode(raw).decode("ascii")


def after(cursor: str | None) -> tuple[float, str] | None:
    """The key a ``cursor`` from ``cursor_for`` names; InvalidParams for any other string."""
    if cursor is None:
        return None
    try:
        updated, session_id = json.loads(base64.urlsafe_b64decode(cursor.encode("ascii")))
        if (
            isinstance(updated, int | float)
            and not isinstance(updated, bool)
            and math.isfinite(updated)
            and isinstance(session_id, str)
        ):
            return float(updated), session_id
    except (ValueError, TypeError, binascii.Error, UnicodeError):
        pass
    shown = cursor if len(cursor) <= 40 else cursor[:39] + "…"
    raise InvalidParams(
        f"cursor {shown!r} is not a cursor this agent gave",
        hint="pass the nextCursor of the previous listing, or no cursor",
    )

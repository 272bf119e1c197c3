"""How large the patch of a `kiln run --ci` may be (``--max-patch-mb``, a count of files), and
the refusal of one past it: exit 3, a limit reached (docs/ci.md), and nothing written."""

from __future__ import annotations

from dataclasses import dataclass

from agent.errors import KilnError


class PatchTooLarge(KilnError):
    exit_code = 3  # a limit was reached (docs/ci.md)
    hint = "raise --max-patch-mb, or ask for a smaller change"


@dataclass(frozen=True)
class Limits:
    max_bytes: int = 50 * 1024 * 1024
    max_files: int = 20_000


def too_large(size: int, limits: Limits) -> str:
    """Why a patch over ``limits`` is refused, in sizes a reader takes in at a glance."""

    def amount(n: float) -> str:  # `--max-patch-mb 0.5` reads "0.5 MB", not "0 MB"
        return f"{n / (1 << 20):.3g} MB" if n >= 1 << 14 else f"{int(n):,} bytes"

    return (
        f"the run's changes are too large for a patch: over {amount(size)} "
        f"(at most {amount(limits.max_bytes)})"
    )

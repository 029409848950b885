"""Fixed-width text tables and number cells for reports (no colour codes: terminals, logs and files alike)."""
from __future__ import annotations

from typing import Optional, Sequence

MISSING = "-"


def num(x: Optional[float], digits: int = 3) -> str:
    return MISSING if x is None else f"{x:.{digits}f}"


def ratio(x: Optional[float]) -> str:
    return MISSING if x is None else f"{x:.2f}x"


def table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """First column left-aligned, the others right-aligned, two spaces apart."""
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]

    def line(cells: Sequence[str]) -> str:
        out = [cells[0].ljust(widths[0])] + [c.rjust(w) for c, w in zip(cells[1:], widths[1:])]
        return "  ".join(out).rstrip()

    return [line(headers), line(["-" * w for w in widths]), *(line(r) for r in rows)]

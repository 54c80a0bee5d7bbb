"""Sizes as the team's policy writes them (`limits: {rewrite: 50GB}`, `safe_below: {rewrite: 1GB}`) and as the
plan shows them. The policy's values are in delta_sync.model.state (`Policy`), which the desired state carries.
"""

from __future__ import annotations

import re

# The kinds of work `limits:` can bound: a REPLACE TABLE rewrite, a backfill's UPDATE, a data check's scan.
LIMIT_KINDS = ("rewrite", "backfill", "scan")

_SIZE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([KMGTP]?i?B|bytes?)?\s*\Z", re.IGNORECASE)
_UNITS = {"": 0, "K": 1, "M": 2, "G": 3, "T": 4, "P": 5}


class SizeError(ValueError):
    """A size as a user wrote it that is not one."""


def parse_size(text: str | int) -> int:
    """A size as users write it (`512MB`, `2TB`, `1.5GiB`, `0`, a whole number of bytes) in bytes. Decimal
    units are powers of 1000 and binary ones (`KiB`) of 1024, as disks and Spark's UI count them."""
    if isinstance(text, bool):
        raise SizeError(f"`{text}` is not a size")
    if isinstance(text, int):
        if text < 0:
            raise SizeError(f"`{text}` is not a size: it is negative")
        return text
    found = _SIZE.match(str(text))
    if found is None:
        raise SizeError(f"`{text}` is not a size")
    number, unit = float(found.group(1)), (found.group(2) or "").upper()
    if unit.startswith("BYTE") or unit in ("", "B"):
        scale = 1
    else:
        base = 1024 if "I" in unit else 1000
        scale = base ** _UNITS[unit[0]]
    size = number * scale
    if scale == 1 and not number.is_integer():
        raise SizeError(f"`{text}` is not a whole number of bytes")
    return int(size)


def size_text(size: int) -> str:
    """A size in the unit it is easiest to read in (binary units, as the plan shows table sizes)."""
    value = float(size)
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            return f"{size} bytes" if unit == "bytes" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{size} bytes"


_DURATION = re.compile(r"\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*\Z", re.IGNORECASE)
_SECONDS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "": 1}


def parse_duration(text: str | int | float) -> float:
    """A duration as users write it (`30s`, `5m`, `1h`, `500ms`; a number is seconds), in seconds."""
    if isinstance(text, bool):
        raise SizeError(f"`{text}` is not a duration")
    found = _DURATION.match(str(text))
    if found is None or float(found.group(1)) <= 0:
        raise SizeError(f"`{text}` is not a duration")
    return float(found.group(1)) * _SECONDS[(found.group(2) or "").lower()]

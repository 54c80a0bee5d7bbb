"""A saved plan's checksum: a digest of its whole canonical content, and short digests per field that say
where an edited file differs.

The typed actions are rebuilt into statements at apply, so an edit of them is refused there; but most of a
plan file is for people (each action's readable text and SQL, the hazards, the summary, the data checks),
and an edit of that part changed nothing that runs while the file now says something else than what ran.
The checksum covers everything but the signature, so any edit is refused, and the signature (when a key is
set) covers the checksum too. Without a key it guards against edits by mistake and edits that did not
recompute it; anyone can recompute it, which is what the signature is for.

The content is canonical (keys sorted, no whitespace), so re-indenting the file or reordering its keys is
no edit. `sha256` alone decides whether the file is as made. The rest only locates a difference, so its
digests are short and packed (a 200-action plan's file grows by about 8%): `fields` holds one code per
top-level field that is not a list, `items` one string per list field, its elements' codes separated by
spaces. A code is a value's digest and, for a dict, the digest of its keys and one per key, so that
`actions[3].sql` is the deepest a difference is named. A difference the short digests miss (one in 65,536
per key) is still refused, by `sha256`, naming the element or field that holds it.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

# The document's own field, and the one left out of the checksum (a signature covers the checksum).
FIELD = "checksum"
SIGNATURE = "signature"

# Digest widths, in hex digits: a value's (its element or field) and each of its keys'.
_VALUE = 8
_KEY = 4


def canonical(value: Any) -> bytes:
    """One spelling of a JSON value: keys sorted, no whitespace."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def content(document: dict[str, Any]) -> dict[str, Any]:
    """What the checksum covers: the whole document but its checksum and signature."""
    return {k: v for k, v in document.items() if k not in (FIELD, SIGNATURE)}


def _digest(value: Any, width: int) -> str:
    return hashlib.sha256(canonical(value)).hexdigest()[:width]


def _code(value: Any) -> str:
    """A value's locator: its digest, then for a dict the digest of its keys and one per key (sorted)."""
    code = _digest(value, _VALUE)
    if isinstance(value, dict):
        keys = sorted(value)
        code += ":" + _digest(keys, _KEY) + "".join(_digest(value[k], _KEY) for k in keys)
    return code


def checksum(document: dict[str, Any]) -> dict[str, Any]:
    """The checksum of a plan document, as the document holds it under `checksum`."""
    covered = content(document)
    return {
        "sha256": hashlib.sha256(canonical(covered)).hexdigest(),
        "fields": {key: _code(value) for key, value in covered.items() if not isinstance(value, list)},
        "items": {key: " ".join(_code(v) for v in value) for key, value in covered.items() if isinstance(value, list)},
    }


def seal(document: dict[str, Any]) -> dict[str, Any]:
    """The document with its checksum (made last, when nothing else of it changes; before any signature)."""
    document[FIELD] = checksum(document)
    return document


def difference(document: dict[str, Any]) -> str | None:
    """How the document differs from when its checksum was made, naming the first field that differs (in the
    document's order); None when it is as made. A document with no checksum says so."""
    recorded = document.get(FIELD)
    if recorded is None:
        return "it has no checksum"
    made = checksum(document)
    if recorded == made:
        return None
    shape = isinstance(recorded, dict) and isinstance(recorded.get("sha256"), str)
    fields, items = (recorded.get("fields"), recorded.get("items")) if shape else (None, None)
    if not isinstance(fields, dict) or not isinstance(items, dict):
        return "its checksum is not one delta-sync wrote"
    if recorded["sha256"] == made["sha256"]:
        return "its checksum was changed"
    covered = content(document)
    # The first difference in the file's own order (a reordered file is still the same plan).
    for key, value in covered.items():
        if key in items:
            found = _located_items(key, value, items[key])
        elif key in fields:
            found = _located_value(key, value, fields[key])
        else:
            found = f"`{key}` was added"
        if found is not None:
            return found
    for key in [*fields, *items]:
        if key not in covered:
            return f"`{key}` was removed"
    return "its content does not match its checksum"


def _located_items(path: str, value: Any, packed: Any) -> str | None:
    if not isinstance(value, list) or not isinstance(packed, str):
        return f"`{path}` was changed"
    codes = packed.split()
    for index in range(max(len(value), len(codes))):
        where = f"{path}[{index}]"
        if index >= len(codes):
            return f"`{where}` was added"
        if index >= len(value):
            return f"`{where}` was removed"
        found = _located_value(where, value[index], codes[index])
        if found is not None:
            return found
    return None


def _located_value(path: str, value: Any, code: Any) -> str | None:
    if not isinstance(code, str):
        return f"`{path}` was changed"
    whole, _, keys = code.partition(":")
    if _digest(value, _VALUE) == whole:
        return None
    if isinstance(value, dict) and keys:
        names = sorted(value)
        if keys[:_KEY] == _digest(names, _KEY):
            parts = [keys[i : i + _KEY] for i in range(_KEY, len(keys), _KEY)]
            for name, part in zip(names, parts, strict=False):
                if _digest(value[name], _KEY) != part:
                    return f"`{path}.{name}` was changed"
        else:
            return f"`{path}` was changed (a key of it was added or removed)"
    return f"`{path}` was changed"

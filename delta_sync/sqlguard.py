"""Which statements given to `delta-sync sql` destroy data or objects, so that they are confirmed first. Pure."""

from __future__ import annotations

import re

# Strings, quoted names and comments carry no keywords: they are blanked before the words are read.
_INERT = re.compile(
    r"""'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"|`(?:[^`]|``)*`|--[^\n]*|/\*.*?\*/""",
    re.DOTALL,
)
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|[()]")


def _top_level_words(statement: str) -> list[str]:
    """Upper-cased keywords outside parentheses (a WHERE in a subquery does not limit a DELETE)."""
    words: list[str] = []
    depth = 0
    for token in _WORD.findall(_INERT.sub(" ", statement)):
        if token == "(":
            depth += 1
        elif token == ")":
            depth = max(0, depth - 1)
        elif depth == 0:
            words.append(token.upper())
    return words


def destructive(statement: str) -> str | None:
    """Why `statement` destroys data or objects, or None when it does not."""
    words = _top_level_words(statement)
    if not words:
        return None
    first = words[0]
    if first == "DROP":
        return f"DROP {' '.join(words[1:2])}".strip() + " removes the object and its data"
    if first == "TRUNCATE":
        return "TRUNCATE removes every row"
    if first in ("DELETE", "UPDATE") and "WHERE" not in words:
        return f"{first} without WHERE changes every row"
    if first == "REPLACE" or words[:3] == ["CREATE", "OR", "REPLACE"]:
        return "REPLACE replaces the object and its data"
    if first == "INSERT" and "OVERWRITE" in words[:3]:
        return "INSERT OVERWRITE replaces the rows"
    if first == "RESTORE":
        return "RESTORE rolls the table back, undoing later commits"
    if first == "ALTER" and "DROP" in words:
        return "ALTER ... DROP removes part of the table"
    return None

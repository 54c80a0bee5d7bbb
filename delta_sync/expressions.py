"""SQL boolean expressions (CHECK constraints): checked for safety and normalised for comparison.

Delta stores a constraint added with ALTER TABLE as the parser's tokens joined by single spaces
(`concat(a, b) != 'x'` becomes `concat ( a , b ) != 'x'`), and one added at CREATE verbatim.
Normalising both sides to lower-cased tokens joined by spaces makes them compare equal.
"""

from __future__ import annotations

import re


class ExpressionError(ValueError):
    pass


_TOKEN = re.compile(
    r"""
    \s*(?:
      (?P<string>'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")
    | (?P<quoted>`(?:[^`]|``)*`)
    | (?P<bad>;|--|/\*)
    | (?P<unterminated>['"`])
    | (?P<number>(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?[A-Za-z]*)
    | (?P<word>[A-Za-z_][A-Za-z0-9_]*)
    | (?P<op><=>|>=|<=|<>|!=|==|\|\||&&|::|->|=>|[-+*/%=<>!&|^~(),.\[\]:?])
    | (?P<other>\S)
    )""",
    re.VERBOSE | re.DOTALL,
)


def tokens(expression: str) -> list[str]:
    """Split an expression into tokens; rejects statement separators and SQL comments."""
    out: list[str] = []
    pos = 0
    text = expression.rstrip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            raise ExpressionError(f"unterminated string or identifier near {text[pos : pos + 20]!r}")
        kind = m.lastgroup
        value = m.group(kind or 0)
        if kind == "bad":
            if value == ";":
                raise ExpressionError("';' is not allowed: a CHECK holds one expression, not statements")
            raise ExpressionError("SQL comments are not allowed in a CHECK expression")
        if kind == "unterminated":
            raise ExpressionError(f"unterminated quote {value} near {text[pos : pos + 20].strip()!r}")
        if kind == "other":
            raise ExpressionError(f"unexpected character {value!r}")
        out.append(value if kind == "string" else value.lower())
        pos = m.end()
    if not out:
        raise ExpressionError("empty expression")
    depth = 0
    for tok in out:
        depth += {"(": 1, ")": -1}.get(tok, 0)
        if depth < 0:
            raise ExpressionError("unbalanced parentheses")
    if depth:
        raise ExpressionError("unbalanced parentheses")
    if "select" in out:
        raise ExpressionError("subqueries are not allowed in a CHECK expression")
    return out


def normalize(expression: str) -> str:
    """Comparison key for an expression: case-folded tokens (string literals kept) joined by spaces."""
    return " ".join(tokens(expression))


def called_functions(expression: str) -> set[str]:
    """The functions an expression calls, lower-cased, dotted names joined (`db.f(x)` gives `db.f`)."""
    found: set[str] = set()
    toks = tokens(expression)
    for i, tok in enumerate(toks):
        if tok != "(" or i == 0 or not _is_name(toks[i - 1]):
            continue
        j = i - 1
        while j >= 2 and toks[j - 1] == "." and _is_name(toks[j - 2]):
            j -= 2
        found.add("".join(toks[j:i]).replace("`", ""))
    return found


# Words a parenthesis may follow without being a call.
_KEYWORDS = frozenset(
    [
        "and",
        "or",
        "not",
        "in",
        "is",
        "like",
        "ilike",
        "rlike",
        "regexp",
        "between",
        "case",
        "when",
        "then",
        "else",
        "end",
        "null",
        "true",
        "false",
        "interval",
        "any",
        "all",
        "some",
        "distinct",
        "over",
        "filter",
        "within",
        "escape",
    ]
)


def _is_name(token: str) -> bool:
    if token in _KEYWORDS:
        return False
    return bool(re.fullmatch(r"[a-z_][a-z0-9_]*|`(?:[^`]|``)*`", token))

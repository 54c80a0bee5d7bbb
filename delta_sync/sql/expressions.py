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
    """Split an expression into tokens, names and keywords lower-cased; rejects statement
    separators and SQL comments."""
    return [_folded(tok) for tok in _scan(expression)]


def _folded(token: str) -> str:
    return token if token[0] in "'\"" else token.lower()


def _scan(expression: str) -> list[str]:
    """The tokens of `expression` as written (case kept), checked as `tokens` documents."""
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
        out.append(value)
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
    if "select" in (tok.lower() for tok in out):
        raise ExpressionError("subqueries are not allowed in a CHECK expression")
    return out


def normalize(expression: str) -> str:
    """Comparison key for an expression: case-folded tokens (string literals kept) joined by spaces,
    `x::t` spelled `CAST(x AS t)` as Delta's parser needs it."""
    return " ".join(_folded(tok) for tok in _casts_spelled_out(_scan(expression)))


def for_delta(expression: str) -> str:
    """`expression` in a form Delta's ADD CONSTRAINT parses: other engines (delta-rs) store casts as
    `x::t`, which Delta's lexer splits into `: :`. Anything else is left exactly as written."""
    raw = _scan(expression)
    if "::" not in raw:
        return expression
    return _joined(_casts_spelled_out(raw))


def tolerant_casts(expression: str) -> str:
    """`expression` with every CAST a TRY_CAST: a value that does not convert becomes NULL instead of
    failing the query (ANSI mode), so a probe can count such rows instead of stopping at the first."""
    toks = _casts_spelled_out(_scan(expression))
    return _joined(
        [
            "TRY_CAST" if tok.lower() == "cast" and i + 1 < len(toks) and toks[i + 1] == "(" else tok
            for i, tok in enumerate(toks)
        ]
    )


_TYPED_LITERALS = frozenset({"date", "timestamp", "timestamp_ntz", "timestamp_ltz", "x"})


def is_non_null_literal(expression: str) -> bool:
    """Whether `expression` is one literal that is not NULL (a number, a string, true or false), optionally
    signed or in parentheses: a value that can never be NULL, whatever the row."""
    try:
        toks = [t for t in tokens(expression) if t not in ("(", ")")]
    except ExpressionError:
        return False
    if toks[:1] in (["-"], ["+"]):
        toks = toks[1:]
    if len(toks) == 2 and toks[0] in _TYPED_LITERALS and toks[1][0] == "'":
        return True  # DATE '2026-01-01', TIMESTAMP '...', X'00'
    if len(toks) != 1:
        return False
    token = toks[0]
    return token[0] in "'\"" or token in ("true", "false") or token[0].isdigit() or token[0] == "."


def readable(expression: str) -> str:
    """`expression` spaced as people write SQL: Delta stores a CHECK added by ALTER TABLE as its
    tokens joined by spaces (`status IN ( 'new' , 'paid' )`). Tokens, their case and string
    literals are kept; only the spacing between them changes, and casts read as `for_delta` writes them."""
    return _joined(_casts_spelled_out(_scan(expression)))


def as_delta_reparses(expression: str) -> str:
    """The text Delta's parser reads again when ADD CONSTRAINT runs: its own tokens joined by
    spaces, where its lexer, which has no `::`, sees two colons."""
    return " ".join(": :" if tok == "::" else tok for tok in _scan(expression))


def _joined(toks: list[str]) -> str:
    text = toks[0]
    for i in range(1, len(toks)):
        text += "" if _tight(toks, i) else " "
        text += toks[i]
    try:
        if _scan(text) == toks:
            return text
    except ExpressionError:
        pass
    # Two tokens ran together into something else (`-` `-1` into a comment): keep every space.
    return " ".join(toks)


def _tight(toks: list[str], i: int) -> bool:
    """Whether no space goes between toks[i - 1] and toks[i]."""
    before, tok = toks[i - 1], toks[i]
    if before in ("(", "[", ".", "::") or tok in (")", "]", ",", ".", "::"):
        return True
    if tok in ("(", "[") and (_is_name(before.lower()) or before in (")", "]")):
        return True  # a call or a subscript
    return before in ("-", "+") and _unary(toks, i - 1)


def _unary(toks: list[str], i: int) -> bool:
    if i == 0:
        return True
    before = toks[i - 1]
    return before in ("(", "[", ",") or before.lower() in _KEYWORDS or bool(re.fullmatch(r"[-+*/%=<>!&|^~:]+", before))


def _casts_spelled_out(toks: list[str]) -> list[str]:
    """`x::t` as `CAST(x AS t)`: the same expression for Spark, and one Delta's parser reads."""
    out = list(toks)
    while "::" in out:
        at = out.index("::")
        start, end = _operand_start(out, at), _type_end(out, at + 1)
        if start is None or end is None:
            raise ExpressionError("a `::` cast without a value before it or a type after it")
        out[start:end] = ["CAST", "(", *out[start:at], "AS", *out[at + 1 : end], ")"]
    return out


def _operand_start(toks: list[str], at: int) -> int | None:
    """Where the primary expression ending just before toks[at] starts."""
    i = at - 1
    if i < 0:
        return None
    if toks[i] in (")", "]"):
        i = _opening(toks, i)
        if i > 0 and (_is_name(toks[i - 1].lower()) or toks[i - 1] in (")", "]")):
            return _operand_start(toks, i)  # a call `f(...)` or a subscript `a[0]`
    elif not (
        _is_name(toks[i].lower()) or toks[i].lower() in ("null", "true", "false") or toks[i][0] in "'\"0123456789."
    ):
        return None
    while i >= 2 and toks[i - 1] == "." and _is_name(toks[i - 2].lower()):
        i -= 2
    return i


def _opening(toks: list[str], close: int) -> int:
    pair = {")": "(", "]": "["}[toks[close]]
    depth = 0
    for i in range(close, -1, -1):
        depth += {toks[close]: 1, pair: -1}.get(toks[i], 0)
        if depth == 0:
            return i
    return 0


def _type_end(toks: list[str], start: int) -> int | None:
    """The index just past the data type starting at toks[start] (`decimal(12, 2)`, `array<int>`)."""
    if start >= len(toks) or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", toks[start]):
        return None
    end = start + 1
    nested = toks[start].lower() in ("array", "map", "struct")
    if end < len(toks) and (toks[end] == "(" or (toks[end] == "<" and nested)):
        close = {"(": ")", "<": ">"}[toks[end]]
        depth = 0
        for j in range(end, len(toks)):
            depth += {toks[end]: 1, close: -1}.get(toks[j], 0)
            if depth == 0:
                return j + 1
        return None
    return end


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

"""A view's query text: checked offline, normalised for comparison, and searched for the tables it reads.
Pure.

Spark stores a view's text verbatim (the span of the query as written), so the spec's text and the
catalog's differ only by what an edit can change without changing the query: whitespace, comments and
the case of keywords and names. `normalize` removes exactly those.

The tables a view reads are the qualified names after FROM and JOIN (and after the commas of a FROM
list). An unqualified name is a CTE, or a table of whatever schema is current when the view is created:
specs name tables as schema.table, and the README says so.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from delta_sync.model.state import TableName, quote_ident

_TOKEN = re.compile(
    r"""
      (?P<space>\s+)
    | (?P<comment>--[^\n]*|/\*.*?\*/)
    | (?P<string>'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")
    | (?P<quoted>`(?:[^`]|``)*`)
    | (?P<word>[A-Za-z_][A-Za-z0-9_]*)
    | (?P<number>\d+(?:\.\d*)?(?:[eE][+-]?\d+)?[A-Za-z]*)
    | (?P<op><=>|>=|<=|<>|!=|==|\|\||::|->|=>|\S)
    """,
    re.VERBOSE | re.DOTALL,
)

# Keywords that end a FROM list (after them, a name is no longer a table the view reads).
_CLAUSES = frozenset(
    {
        "where",
        "group",
        "having",
        "order",
        "limit",
        "window",
        "union",
        "intersect",
        "except",
        "minus",
        "qualify",
        "on",
        "using",
        "lateral",
        "pivot",
        "unpivot",
        "sort",
        "cluster",
        "distribute",
        "select",
    }
)
# `TABLE s.t` is a query of its own: it reads s.t.
_JOIN_WORDS = frozenset({"join", "from", "table"})
_QUERY_STARTS = frozenset({"select", "with", "from", "values", "table", "("})


class QueryError(ValueError):
    pass


@dataclass(frozen=True, slots=True)
class Token:
    kind: str
    text: str
    start: int
    end: int

    @property
    def word(self) -> str:
        """The token as a name or keyword compares: lower-cased, backquotes removed."""
        if self.kind == "quoted":
            return self.text[1:-1].replace("``", "`").lower()
        return self.text.lower() if self.kind in ("word", "op", "number") else self.text


@dataclass(frozen=True, slots=True)
class Reference:
    """A table the query reads, and where its name is written (start, end) in the text."""

    name: TableName
    start: int
    end: int
    # An alias follows the name (`shop.orders o`): columns are qualified by it, not by the table's name.
    aliased: bool = False
    # How many parts the name is written with (2: schema.table, 3: catalog.schema.table).
    parts: int = 2


def scan(sql: str) -> list[Token]:
    """Every token but whitespace and comments; raises QueryError for an unterminated quote or comment."""
    found: list[Token] = []
    pos = 0
    while pos < len(sql):
        m = _TOKEN.match(sql, pos)
        kind = m.lastgroup if m is not None else None
        if m is None or kind is None or (kind == "op" and (m.group() in ("'", '"', "`") or sql.startswith("/*", pos))):
            raise QueryError(f"unterminated quote or comment near {sql[pos : pos + 20]!r}")
        if kind not in ("space", "comment"):
            found.append(Token(kind, m.group(), m.start(), m.end()))
        pos = m.end()
    return found


def problem(sql: str) -> str | None:
    """What is wrong with a view's query that can be told without an engine (None: nothing)."""
    try:
        tokens = scan(sql)
    except QueryError as exc:
        return str(exc)
    if not tokens:
        return "the query is empty"
    if tokens[0].word not in _QUERY_STARTS:
        return f"a view's sql is one query (SELECT, WITH, VALUES, ...), not `{tokens[0].text}`"
    depth = 0
    for token in tokens:
        if token.text == ";":
            return "';' is not allowed: a view's sql is one query, not statements"
        depth += {"(": 1, ")": -1}.get(token.text, 0)
        if depth < 0:
            return "unbalanced parentheses"
    return "unbalanced parentheses" if depth else None


def normalize(sql: str) -> str:
    """Comparison key of a query: its tokens, names and keywords lower-cased (string literals kept),
    joined by single spaces. Text this scanner cannot read (another engine's syntax) compares by its words."""
    try:
        tokens = scan(sql)
    except QueryError:
        return " ".join(sql.split())
    return " ".join(t.word if t.kind != "quoted" else quote_ident(t.word) for t in tokens)


def references(sql: str) -> list[Reference]:
    """The qualified tables the query reads, in the order written (a name may appear more than once)."""
    tokens = scan(sql)
    found: list[Reference] = []
    # Per parenthesis depth: whether a FROM list is open there, and whether a table name is expected next.
    in_from: dict[int, bool] = {}
    expect: dict[int, bool] = {}
    depth = 0
    i = 0
    while i < len(tokens):
        token = tokens[i]
        if token.text == "(":
            # Where a table is expected, a parenthesis opens a join (`FROM (a JOIN b)`) or a subquery (whose
            # SELECT closes the FROM list again).
            opens_join = expect.get(depth, False)
            depth += 1
            in_from[depth], expect[depth] = opens_join, opens_join
            i += 1
            continue
        if token.text == ")":
            in_from.pop(depth, None)
            expect.pop(depth, None)
            depth -= 1
            expect[depth] = False
            i += 1
            continue
        word = token.word if token.kind == "word" else ""
        if word in _JOIN_WORDS:
            in_from[depth], expect[depth] = True, True
            i += 1
            continue
        if word in _CLAUSES:
            # A join's condition does not end the FROM list: `a JOIN b ON ..., c` still reads c.
            in_from[depth] = word in ("on", "using", "lateral") and in_from.get(depth, False)
            expect[depth] = False
            i += 1
            continue
        if token.text == "," and in_from.get(depth):
            expect[depth] = True
            i += 1
            continue
        if expect.get(depth) and token.kind in ("word", "quoted"):
            parts, end = _name_at(tokens, i)
            is_function = end < len(tokens) and tokens[end].text == "("
            if len(parts) in (2, 3) and not is_function and all(_plain(p) for p in parts):
                aliased = end < len(tokens) and _is_alias(tokens[end])
                name = TableName.parse(".".join(parts))
                found.append(Reference(name, token.start, tokens[end - 1].end, aliased, len(parts)))
            expect[depth] = False
            i = end
            continue
        if expect.get(depth):
            expect[depth] = False
        i += 1
    return found


# Words that may follow a table name and are not its alias.
_NOT_ALIAS = _CLAUSES | {
    "join",
    "inner",
    "left",
    "right",
    "full",
    "cross",
    "outer",
    "natural",
    "semi",
    "anti",
    "tablesample",
    "version",
    "timestamp",
    "for",
    "with",
}


def _is_alias(token: Token) -> bool:
    return token.kind == "quoted" or (token.kind == "word" and (token.word == "as" or token.word not in _NOT_ALIAS))


def _plain(part: str) -> bool:
    return re.fullmatch(r"[a-z_][a-z0-9_]*", part) is not None


def _name_at(tokens: list[Token], i: int) -> tuple[list[str], int]:
    parts = [tokens[i].word]
    j = i + 1
    while j + 1 < len(tokens) and tokens[j].text == "." and tokens[j + 1].kind in ("word", "quoted"):
        parts.append(tokens[j + 1].word)
        j += 2
    return parts, j


def read_tables(sql: str) -> frozenset[TableName]:
    return frozenset(r.name for r in references(sql))


def rewrite(sql: str, replacements: Mapping[TableName, str]) -> str:
    """The query with each reference to a name in `replacements` replaced by its text (an identifier), aliased
    as the table where no alias follows, so that `orders.id` still names its column."""
    out = sql
    for ref in sorted(references(sql), key=lambda r: r.start, reverse=True):
        if ref.name in replacements:
            alias = "" if ref.aliased else f" AS {quote_ident(ref.name.name)}"
            out = out[: ref.start] + replacements[ref.name] + alias + out[ref.end :]
    return out


def with_names(sql: str, names: Sequence[str], alias: str) -> str:
    """The query with its columns renamed by position, as `CREATE VIEW v (names) AS query` names them (a
    count that differs is the engine's ASSIGNMENT_ARITY_MISMATCH). `alias` names the query in messages."""
    listed = ", ".join(quote_ident(n) for n in names)
    # The newline ends a `--` comment the query may end with.
    return f"SELECT * FROM (\n{sql}\n) AS {quote_ident(alias)}({listed})"


def as_stored(
    sql: str,
    query_columns: Sequence[str] | None,
    names: Sequence[str],
    alias: str,
    types: Sequence[str | None] = (),
) -> str:
    """The query of a stored view as Spark reads the view: the columns the query gave when the view was created
    (`query_columns`), found by name in what it gives now, under the view's own names, each cast to the type
    stored for it (`types`, by position; None or missing: not cast). Without `query_columns` (a view from an
    older engine), by position, as they were named at creation."""
    if not names:
        return sql
    # Spark casts each column to its stored type when it reads the view: a type the new column cannot be cast
    # to (string to array<string>) fails there, though the query itself still resolves.
    cast = [types[i] if i < len(types) else None for i in range(len(names))]
    if query_columns is None or len(query_columns) != len(names):
        named = with_names(sql, names, alias)
        if not any(cast):
            return named
        sources: Sequence[str] = names
        sql = named
    else:
        sources = query_columns
    picked = ", ".join(
        f"{_cast(quote_ident(q), t)} AS {quote_ident(n)}" for q, n, t in zip(sources, names, cast, strict=True)
    )
    return f"SELECT {picked} FROM (\n{sql}\n) AS {quote_ident(alias)}"


def _cast(column: str, type_: str | None) -> str:
    return column if type_ is None else f"CAST({column} AS {type_})"


def column_list(text: str) -> tuple[str, ...] | None:
    """Names as Spark lists them in a view's details (`[`a`, `b c`]`); None when the text is not such a list."""
    try:
        tokens = scan(text.strip())
    except QueryError:
        return None
    if len(tokens) < 2 or tokens[0].text != "[" or tokens[-1].text != "]":
        return None
    inner = tokens[1:-1]
    names = inner[0::2]
    if any(t.kind not in ("quoted", "word") for t in names) or any(t.text != "," for t in inner[1::2]):
        return None
    if len(inner) % 2 == 0 and inner:
        return None  # a trailing comma
    return tuple(t.text[1:-1].replace("``", "`") if t.kind == "quoted" else t.text for t in names)


def qualify(sql: str, catalog: str) -> str:
    """The query with each two-part table name put in `catalog` (an environment's catalog: its specs'
    two-part names are in it, so are those its views read)."""
    out = sql
    for ref in sorted(references(sql), key=lambda r: r.start, reverse=True):
        if ref.parts == 2:
            out = out[: ref.start] + f"{quote_ident(catalog)}.{out[ref.start : ref.end]}" + out[ref.end :]
    return out


def one_line(sql: str, width: int = 80) -> str:
    """The query on one line for a plan's diff: whitespace collapsed, cut at `width` characters."""
    text = " ".join(sql.split())
    return text if len(text) <= width else text[: width - 3] + "..."

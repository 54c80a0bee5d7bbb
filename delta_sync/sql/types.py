"""Spark SQL data types: one canonical spelling for specs and for what Spark reports.

`parse_type` reads what users write (any alias Spark accepts); `from_spark_json` reads the JSON
form of a Spark schema. Both produce the same canonical text (Spark's simple string: `bigint`,
`int`, `decimal(18,2)`, `array<string>`, `struct<a:int,b:string NOT NULL>`), so a second plan
never shows a diff for `long` vs `bigint`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from delta_sync.model.state import is_simple_ident, quote_ident


class TypeSyntaxError(ValueError):
    pass


class CollatedString(TypeSyntaxError):
    """`string COLLATE <name>` with a collation other than the default: Spark parses it, and the spec layer says
    why a table cannot hold it. `path` is where it sits within the type (`city`, `element`, `value.name`)."""

    def __init__(self, collation: str, path: tuple[str, ...]) -> None:
        self.collation = collation
        self.path = path
        where = f" at {field_path(path)}" if path else ""
        super().__init__(f"string COLLATE {collation}{where}")


# The collation every plain `string` has: `string COLLATE UTF8_BINARY` is `string`, and Delta stores it as such.
DEFAULT_COLLATION = "utf8_binary"


_ALIASES = {
    "boolean": "boolean",
    "bool": "boolean",
    "tinyint": "tinyint",
    "byte": "tinyint",
    "smallint": "smallint",
    "short": "smallint",
    "int": "int",
    "integer": "int",
    "bigint": "bigint",
    "long": "bigint",
    "float": "float",
    "real": "float",
    "double": "double",
    "string": "string",
    "binary": "binary",
    "date": "date",
    "timestamp": "timestamp",
    "timestamp_ltz": "timestamp",
    "timestamp_ntz": "timestamp_ntz",
    "variant": "variant",
}
_DECIMALS = {"decimal", "dec", "numeric"}
_SIZED_STRINGS = {"char", "character", "varchar"}

# Spark's JSON names for atomic types differ from the SQL spelling for a few of them.
_JSON_ATOMIC = {
    "long": "bigint",
    "integer": "int",
    "short": "smallint",
    "byte": "tinyint",
}

_TOKEN = re.compile(r"\s*(?:(`(?:[^`]|``)*`)|([A-Za-z_][A-Za-z0-9_]*)|([0-9]+)|([<>(),:])|('(?:[^'\\]|\\.)*'))")


def _tokenize(text: str) -> list[str]:
    tokens: list[str] = []
    pos = 0
    text = text.rstrip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m or m.end() == pos:
            raise TypeSyntaxError(f"unexpected {text[pos:].strip()[:20]!r}")
        tokens.append(m.group(m.lastindex or 0))
        pos = m.end()
    return tokens


_COLLATION_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|`(?:[^`]|``)+`")


def field_path(steps: Sequence[str]) -> str:
    """Steps into a type as one dotted path, each field name that needs them in backquotes (`a.element.b`)."""
    return ".".join(_ident(step) for step in steps)


def _ident(name: str) -> str:
    return name if is_simple_ident(name) else quote_ident(name)


# Nested types deeper than this are refused (Python's recursion limit would be hit well before Spark's).
MAX_TYPE_DEPTH = 50


class _Parser:
    def __init__(self, text: str) -> None:
        self.tokens = _tokenize(text)
        self.pos = 0
        self.depth = 0
        # The steps from the whole type to the one being read, named as Delta's ALTER COLUMN names them.
        self.path: list[str] = []

    def peek(self) -> str | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def take(self, expected: str | None = None) -> str:
        tok = self.peek()
        if tok is None:
            raise TypeSyntaxError(f"ended early, expected {expected or 'more'}")
        if expected is not None and tok.lower() != expected:
            raise TypeSyntaxError(f"expected {expected!r}, found {tok!r}")
        self.pos += 1
        return tok

    def number(self) -> int:
        tok = self.take("a number") if self.peek() is None else self.take()
        if not tok.isdigit():
            raise TypeSyntaxError(f"expected a number, found {tok!r}")
        return int(tok)

    def parse_type(self) -> str:
        self.depth += 1
        try:
            if self.depth > MAX_TYPE_DEPTH:
                raise TypeSyntaxError(f"types nest deeper than {MAX_TYPE_DEPTH} levels")
            return self._parse_type()
        finally:
            self.depth -= 1

    def _parse_type(self) -> str:
        word = self.take()
        lower = word.lower()
        if lower in _ALIASES:
            if (self.peek() or "").lower() == "collate":
                self.collation(_ALIASES[lower])
            return _ALIASES[lower]
        if lower in _DECIMALS:
            precision, scale = 10, 0
            if self.peek() == "(":
                self.take("(")
                precision = self.number()
                if self.peek() == ",":
                    self.take(",")
                    scale = self.number()
                self.take(")")
            if not 1 <= precision <= 38 or not 0 <= scale <= precision:
                raise TypeSyntaxError(
                    f"decimal({precision},{scale}) needs 1 <= precision <= 38 and 0 <= scale <= precision"
                )
            return f"decimal({precision},{scale})"
        if lower in _SIZED_STRINGS:
            self.take("(")
            length = self.number()
            self.take(")")
            if length < 1:
                raise TypeSyntaxError(f"{lower}({length}) needs a positive length")
            sized = f"{'varchar' if lower == 'varchar' else 'char'}({length})"
            if (self.peek() or "").lower() == "collate":
                self.collation(sized)
            return sized
        if lower == "array":
            self.take("<")
            element = self.step("element")
            self.take(">")
            return f"array<{element}>"
        if lower == "map":
            self.take("<")
            key = self.step("key")
            self.take(",")
            value = self.step("value")
            self.take(">")
            return f"map<{key},{value}>"
        if lower == "struct":
            return self.parse_struct()
        raise TypeSyntaxError(f"unknown type {word!r}")

    def step(self, name: str) -> str:
        self.path.append(name)
        try:
            return self.parse_type()
        finally:
            self.path.pop()

    def collation(self, base: str) -> None:
        """Reads `COLLATE <name>` after `base`; only the default collation of a string is the plain type."""
        self.take("collate")
        name = self.take("a collation name") if self.peek() is None else self.take()
        if not _COLLATION_NAME.fullmatch(name):
            raise TypeSyntaxError(f"expected a collation name after COLLATE, found {name!r}")
        collation = name[1:-1].replace("``", "`") if name.startswith("`") else name
        if base != "string":
            # What Spark answers too (INVALID_JSON_DATA_TYPE_FOR_COLLATIONS).
            raise TypeSyntaxError(f"COLLATE applies to string only, not to {base}")
        if collation.lower() != DEFAULT_COLLATION:
            raise CollatedString(collation, tuple(self.path))

    def parse_struct(self) -> str:
        fields = [struct_field(f.name, f.type, nullable=f.nullable, comment=f.comment) for f in self.fields()]
        return f"struct<{','.join(fields)}>"

    def fields(self) -> list[Field]:
        self.take("<")
        fields: list[Field] = []
        seen: set[str] = set()
        while self.peek() != ">":
            if fields:
                self.take(",")
            raw = self.take()
            name = raw[1:-1].replace("``", "`") if raw.startswith("`") else raw
            if raw in "<>(),:" or not name or raw.startswith("'"):
                raise TypeSyntaxError(f"expected a struct field name, found {raw!r}")
            if name.lower() in seen:
                raise TypeSyntaxError(f"struct field {name!r} appears twice")
            seen.add(name.lower())
            if self.peek() == ":":
                self.take(":")
            field_type = self.step(name)
            not_null = False
            if (self.peek() or "").lower() == "not":
                self.take("not")
                self.take("null")
                not_null = True
            comment = None
            if (self.peek() or "").lower() == "comment":
                self.take("comment")
                literal = self.take()
                if not literal.startswith("'"):
                    raise TypeSyntaxError(f"COMMENT needs a quoted string, found {literal!r}")
                # An empty comment reads back as none, like a top-level one.
                comment = _unescape(literal[1:-1]) or None
            fields.append(Field(name, field_type, not not_null, comment))
        self.take(">")
        return fields


@dataclass(frozen=True, slots=True)
class Field:
    name: str
    type: str
    nullable: bool = True
    comment: str | None = None

    @property
    def key(self) -> str:
        return self.name.lower()


_ESCAPES = {"n": "\n", "r": "\r", "t": "\t", "0": "\0"}


def _unescape(body: str) -> str:
    """Spark's string-literal rules: a backslash escapes the next character."""
    return re.sub(r"\\(.)", lambda m: _ESCAPES.get(m.group(1), m.group(1)), body, flags=re.DOTALL)


def string_literal(value: str) -> str:
    """A Spark SQL string literal. Spark unescapes backslash sequences, so escape them all."""
    escaped = value.replace("\\", "\\\\").replace("'", "\\'").replace("\n", "\\n").replace("\r", "\\r")
    return f"'{escaped}'"


def struct_field(name: str, type_: str, *, nullable: bool, comment: str | None = None) -> str:
    shown = name if is_simple_ident(name) else quote_ident(name)
    text = f"{shown}:{type_}{'' if nullable else ' NOT NULL'}"
    return text if comment is None else f"{text} COMMENT {string_literal(comment)}"


def struct_fields(type_: str) -> list[Field] | None:
    """The fields of a canonical struct type, or None for any other type."""
    if not type_.startswith("struct<"):
        return None
    parser = _Parser(type_)
    parser.take("struct")
    return parser.fields()


def element_type(type_: str) -> str | None:
    if not type_.startswith("array<"):
        return None
    parser = _Parser(type_)
    parser.take("array")
    parser.take("<")
    return parser.parse_type()


def map_types(type_: str) -> tuple[str, str] | None:
    if not type_.startswith("map<"):
        return None
    parser = _Parser(type_)
    parser.take("map")
    parser.take("<")
    key = parser.parse_type()
    parser.take(",")
    return key, parser.parse_type()


@dataclass(frozen=True, slots=True)
class NestedNotNull:
    """A NOT NULL struct field below an array's element or a map's key or value, which Delta refuses
    (DELTA_NESTED_NOT_NULL_CONSTRAINT): its steps from the column (`("element", "qty")`), and a CHECK over the
    column that Delta accepts and that holds the same rule, or None where no CHECK can say it."""

    path: tuple[str, ...]
    check: str | None


def nested_not_null(column: str, type_: str) -> list[NestedNotNull]:
    """The NOT NULL fields inside arrays and maps of `column`, of canonical type `type_`, outermost first. A NOT
    NULL field of a struct that no array or map holds is fine, and a map's key, never null in Spark, is no field.
    """
    found: list[NestedNotNull] = []
    _walk_not_null(type_, (), _Reach(_ident(column), listed=False), found)
    return found


@dataclass(frozen=True, slots=True)
class _Reach:
    """How a CHECK reaches the values at one place in a column's type: `expr` is one value (`s.x`), or, when
    `listed`, an array of every non-null value there (`array_compact(items)`); None when no CHECK can reach it.

    Delta's ADD CONSTRAINT takes no lambda (`x -> ...` is a syntax error there) and fails every write whose
    CHECK names a field through an array as a column (`items.qty`: DELTA_UNSUPPORTED_INVARIANT_NON_STRUCT), so
    the values are gathered with functions: a field of an array of structs read off a function's result."""

    expr: str | None
    listed: bool

    def into(self, step: str, kind: str) -> _Reach:
        if self.expr is None:
            return self
        if kind == "field":
            field = f"{self.expr}.{_ident(step)}"
            return _Reach(f"array_compact({field})", True) if self.listed else _Reach(field, False)
        if kind == "element":
            inner = f"flatten({self.expr})" if self.listed else self.expr
            return _Reach(f"array_compact({inner})", True)
        if self.listed:
            return _Reach(None, True)  # the keys or values of an array of maps: only a lambda reaches them
        return _Reach(f"array_compact(map_{step}s({self.expr}))", True)

    def not_null(self, field: str) -> str | None:
        if self.expr is None or not self.listed:
            return None
        # NULL where the column or a struct around the array is NULL: that holds no field, so it passes.
        return f"coalesce(size(array_compact({self.expr}.{_ident(field)})) = size({self.expr}), true)"


def _walk_not_null(type_: str, path: tuple[str, ...], reach: _Reach, found: list[NestedNotNull]) -> None:
    fields = struct_fields(type_)
    if fields is not None:
        for field in fields:
            if reach.listed and not field.nullable:
                found.append(NestedNotNull((*path, field.name), reach.not_null(field.name)))
            _walk_not_null(field.type, (*path, field.name), reach.into(field.name, "field"), found)
        return
    element = element_type(type_)
    if element is not None:
        _walk_not_null(element, (*path, "element"), reach.into("element", "element"), found)
        return
    pair = map_types(type_)
    if pair is not None:
        _walk_not_null(pair[0], (*path, "key"), reach.into("key", "key"), found)
        _walk_not_null(pair[1], (*path, "value"), reach.into("value", "value"), found)


def parse_type(text: str) -> str:
    """Canonical spelling of a Spark SQL type as users write it; raises TypeSyntaxError."""
    parser = _Parser(text)
    if parser.peek() is None:
        raise TypeSyntaxError("empty type")
    result = parser.parse_type()
    if parser.peek() is not None:
        raise TypeSyntaxError(f"unexpected {parser.peek()!r} after {result}")
    return result


def from_spark_json(data_type: Any, metadata: Mapping[str, Any] | None = None) -> str:
    """Canonical spelling of a type from a Spark schema's JSON (`StructType.jsonValue()`)."""
    original = (metadata or {}).get("__CHAR_VARCHAR_TYPE_STRING")
    if isinstance(original, str):
        # Delta stores char/varchar as string plus this metadata key.
        return parse_type(original)
    if isinstance(data_type, str):
        if data_type in _JSON_ATOMIC:
            return _JSON_ATOMIC[data_type]
        return parse_type(data_type)
    kind = data_type["type"]
    if kind == "array":
        return f"array<{from_spark_json(data_type['elementType'])}>"
    if kind == "map":
        return f"map<{from_spark_json(data_type['keyType'])},{from_spark_json(data_type['valueType'])}>"
    if kind == "struct":
        fields = [
            struct_field(
                f["name"],
                from_spark_json(f["type"], f.get("metadata")),
                nullable=f["nullable"],
                comment=(f.get("metadata") or {}).get("comment") or None,
            )
            for f in data_type["fields"]
        ]
        return f"struct<{','.join(fields)}>"
    raise TypeSyntaxError(f"unsupported Spark type {kind!r}")


_INTEGRAL = ("tinyint", "smallint", "int", "bigint")
_DECIMAL = re.compile(r"decimal\((\d+),(\d+)\)\Z")
_SIZED = re.compile(r"(char|varchar)\((\d+)\)\Z")


def _decimal(type_: str) -> tuple[int, int] | None:
    m = _DECIMAL.match(type_)
    return (int(m.group(1)), int(m.group(2))) if m else None


def change_kind(before: str, after: str) -> str | None:
    """How Delta can change a column from `before` to `after` (canonical types), in place.

    "widening": Delta's type widening (needs `delta.enableTypeWidening`); "plain": allowed without
    it (char/varchar growth); None: not possible in place (needs a rewrite).
    """
    if before == after:
        return "plain"
    if before in _INTEGRAL and after in _INTEGRAL:
        return "widening" if _INTEGRAL.index(after) > _INTEGRAL.index(before) else None
    if (before, after) in (("float", "double"), ("date", "timestamp_ntz")):
        return "widening"
    if before in _INTEGRAL[:3] and after == "double":
        return "widening"
    target = _decimal(after)
    if target is not None:
        source = _decimal(before)
        precision, scale = target
        if source is not None:
            grow_p, grow_s = precision - source[0], scale - source[1]
            return "widening" if grow_p >= grow_s >= 0 else None
        if before in _INTEGRAL[:3] and precision - scale >= 10:
            return "widening"
        if before == "bigint" and precision - scale >= 20:
            return "widening"
        return None
    sized = _SIZED.match(before)
    if sized is not None:
        if after == "string":
            return "plain"
        grown = _SIZED.match(after)
        if grown and grown.group(1) == "varchar" and int(grown.group(2)) >= int(sized.group(2)):
            return "plain"
    return None

"""The rules of `delta-sync lint` and the `lint:` section of delta-sync.yaml that turns them on: each rule's
settings as a model (validated with the rest of the project file, so a bad pattern or an unknown level is a
problem at its line), and each rule as a function from one table spec to what it finds there. The rules of
comments and names apply to a view spec as well (VIEW_RULES), and the rules that find things at a column
(spec_models.COLUMN_LINT_RULES) are the ones a column's own `lint: {disable: [...]}` can turn off. Pure: the
documents come read, and delta_sync.specs.lint runs the rules and words the findings.

```yaml
lint:
  table-comment: error
  column-comment: warning
  primary-key: error
  schema-name: {pattern: "[a-z][a-z0-9_]*"}
  table-name: {pattern: "[a-z][a-z0-9_]*"}
  column-name: {pattern: "[a-z][a-z0-9_]*", level: warning}
  required-properties:
    properties: {delta.enableChangeDataFeed: "true", owner.team: null}
  forbidden-types:
    - {types: [float, double], columns: "(amount|price|cost)", instead: "decimal(18,2)"}
    - {types: [string], in: primary-key, level: warning}
```
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, Literal, Protocol

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field

from delta_sync.specs.spec_values import Invalid, _canonical_type, rule_reference
from delta_sync.specs.yamldoc import kind_of
from delta_sync.sql import types as sqltypes

if TYPE_CHECKING:  # the models are built when lint runs, not when the project file is read
    from delta_sync.specs.spec_models import TableSpec, ViewSpec

Level = Literal["error", "warning"]
_LEVELS: tuple[Level, ...] = ("error", "warning")
KeyKind = Literal["primary-key", "foreign-key"]
_KEY_KINDS: tuple[KeyKind, ...] = ("primary-key", "foreign-key")
_LEVEL_HELP = "error (lint exits 3) or warning (printed, exit 0); default error."


def _level(value: Any) -> Any:
    if value in _LEVELS:
        return value
    close = difflib.get_close_matches(str(value), _LEVELS, n=1)
    shown = f"`{value}`" if isinstance(value, str) else kind_of(value)
    raise Invalid(
        f"{shown} is not a lint level", (f"did you mean `{close[0]}`? " if close else "") + "write error or warning"
    )


def _pattern(text: str) -> str:
    try:
        re.compile(text)
    except re.error as exc:
        raise Invalid(
            f"`{text}` is not a regular expression ({exc.msg})",
            "write a Python regular expression, e.g. [a-z][a-z0-9_]*; quote it in YAML",
        ) from None
    return text


# A type named without its parameters stands for every type of that family: `decimal` is any decimal(p,s).
_FAMILIES = {
    "decimal": "decimal",
    "dec": "decimal",
    "numeric": "decimal",
    "char": "char",
    "character": "char",
    "varchar": "varchar",
    "array": "array",
    "map": "map",
    "struct": "struct",
}


def _type(text: str) -> str:
    family = _FAMILIES.get(text.strip().lower())
    if family is not None:
        return family
    try:
        return sqltypes.parse_type(text)
    except sqltypes.TypeSyntaxError as exc:
        raise Invalid(
            f"`{text}` is not a Spark type ({exc})",
            "e.g. double, string, decimal (any precision and scale) or decimal(38,0)",
        ) from None


def _key_kinds(value: Any) -> Any:
    kinds = [value] if isinstance(value, str) else value
    if not isinstance(kinds, list):
        raise Invalid(
            f"`in` must be primary-key, foreign-key or a list of them, got {kind_of(value)}", "e.g. in: primary-key"
        )
    for kind in kinds:
        if kind not in _KEY_KINDS:
            shown = f"`{kind}`" if isinstance(kind, str) else kind_of(kind)
            raise Invalid(
                f"{shown} is not a kind of key", "write primary-key, foreign-key, or [primary-key, foreign-key]"
            )
    return kinds


def _text_or_null(value: Any) -> Any:
    # As the spec reads a property: YAML's `true` / `8` are the obvious strings; null means "set, to any value".
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    return value


_Level = Annotated[Level, BeforeValidator(_level)]
_Pattern = Annotated[str, AfterValidator(_pattern)]


class _Config(BaseModel):
    # As the project file's models: YAML gives typed values, only the coercions declared here happen.
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class NamingRule(_Config):
    """A naming convention: every name of its kind matches the pattern, whole."""

    pattern: _Pattern = Field(description="A regular expression the whole name must match, e.g. [a-z][a-z0-9_]*.")
    level: _Level = Field("error", description=_LEVEL_HELP)


class RequiredProperties(_Config):
    """Table properties every table sets, to a given value or to any."""

    properties: dict[str, Annotated[str | None, BeforeValidator(_text_or_null)]] = Field(
        min_length=1,
        description='key -> the value it must have, e.g. delta.enableChangeDataFeed: "true"; null: any value.',
    )
    level: _Level = Field("error", description=_LEVEL_HELP)


class ForbiddenType(_Config):
    """Types the columns it selects (by name, by key, or all) may not have, nested ones included."""

    types: list[Annotated[str, AfterValidator(_type)]] = Field(
        min_length=1, description="Spark types, e.g. [float, double]; decimal alone is any decimal(p,s)."
    )
    columns: _Pattern | None = Field(
        None, description="Only columns whose name contains a match of this regular expression (any case)."
    )
    in_: Annotated[list[KeyKind], BeforeValidator(_key_kinds)] | None = Field(
        None, alias="in", description="Only key columns: primary-key, foreign-key, or both as a list."
    )
    instead: str | None = Field(None, description="What to use instead, shown with each finding, e.g. decimal(18,2).")
    level: _Level = Field("error", description=_LEVEL_HELP)


class LintSettings(_Config):
    """The `lint:` section of delta-sync.yaml: the rules `delta-sync lint` checks; a rule left out is off."""

    table_comment: _Level | None = Field(None, alias="table-comment", description="Every table has a comment.")
    column_comment: _Level | None = Field(None, alias="column-comment", description="Every column has a comment.")
    primary_key: _Level | None = Field(None, alias="primary-key", description="Every table declares primary_key:.")
    schema_name: NamingRule | None = Field(None, alias="schema-name", description="Schema names: {pattern:, level:}.")
    table_name: NamingRule | None = Field(None, alias="table-name", description="Table names: {pattern:, level:}.")
    column_name: NamingRule | None = Field(None, alias="column-name", description="Column names: {pattern:, level:}.")
    required_properties: RequiredProperties | None = Field(
        None, alias="required-properties", description="Properties every table sets: {properties:, level:}."
    )
    forbidden_types: list[ForbiddenType] | None = Field(
        None,
        alias="forbidden-types",
        min_length=1,
        description="Types some columns may not have: a list of {types:, columns:, in:, instead:, level:}.",
    )
    rules: list[Annotated[str, AfterValidator(rule_reference)]] = Field(
        default_factory=list,
        description="Python rules over each spec file, as package.module:function (e.g. ci.lint:owners_named): "
        "each gets the file and returns findings.",
    )


# --- the rules -------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Hit:
    """What a rule found: where in the document (a path of keys and indexes), how bad, and what."""

    loc: tuple[Any, ...]
    level: Level
    message: str


class Named(Protocol):
    """What the rules of comments and names read, alike in a table spec and a view spec."""

    @property
    def kind(self) -> str:
        """`table` or `view`: the word of the findings, and the key of the name's line."""
        ...

    @property
    def name(self) -> str: ...

    @property
    def comment(self) -> str | None: ...

    @property
    def column_names(self) -> list[str]:
        """The names of `columns:` in order (a view's only when its spec lists them)."""
        ...

    def where(self, key: str) -> tuple[Any, ...]:
        """`key`'s place when the file has it, else the name's line."""
        ...


@dataclass(frozen=True, slots=True)
class Subject:
    """One table spec as lint sees it: the document's data as written (the environment's vars filled in), the
    model it validates to, and the project's table defaults it gets."""

    data: dict[Any, Any]
    spec: TableSpec
    # The table properties the project's `defaults:` give every table (the environment's, merged).
    defaults: Mapping[str, str] = dataclasses.field(default_factory=dict)

    @property
    def kind(self) -> str:
        return "table"

    @property
    def name(self) -> str:
        return self.spec.table

    @property
    def comment(self) -> str | None:
        return self.spec.comment

    @property
    def column_names(self) -> list[str]:
        return [column.name for column in self.spec.columns]

    def where(self, key: str) -> tuple[Any, ...]:
        return (key,) if key in self.data else ("table",)


@dataclass(frozen=True, slots=True)
class ViewSubject:
    """One view spec as lint sees it, for the rules of VIEW_RULES."""

    data: dict[Any, Any]
    spec: ViewSpec

    @property
    def kind(self) -> str:
        return "view"

    @property
    def name(self) -> str:
        return self.spec.view

    @property
    def comment(self) -> str | None:
        return self.spec.comment

    @property
    def column_names(self) -> list[str]:
        return [column.name for column in self.spec.columns or ()]

    def where(self, key: str) -> tuple[Any, ...]:
        return (key,) if key in self.data else ("view",)


def _missing(text: str | None) -> bool:
    return not (text or "").strip()


def table_comment(subject: Named, level: Level) -> Iterator[Hit]:
    if _missing(subject.comment):
        yield Hit(subject.where("comment"), level, f"{subject.kind} `{subject.name}` has no comment")


def column_comment(subject: Subject, level: Level) -> Iterator[Hit]:
    for index, column in enumerate(subject.spec.columns):
        if _missing(column.comment):
            loc = ("columns", index, "comment") if column.comment is not None else ("columns", index)
            yield Hit(loc, level, f"column `{column.name}` has no comment")


def primary_key(subject: Subject, level: Level) -> Iterator[Hit]:
    if subject.spec.primary_key is None:
        yield Hit(("table",), level, f"table `{subject.spec.table}` declares no primary key (primary_key:)")


@functools.lru_cache(maxsize=256)
def _compiled(pattern: str, flags: int = 0) -> re.Pattern[str]:
    return re.compile(pattern, flags)


def schema_name(subject: Named, rule: NamingRule) -> Iterator[Hit]:
    schema = subject.name.split(".")[-2]
    if not _compiled(rule.pattern).fullmatch(schema):
        yield Hit((subject.kind,), rule.level, f"schema `{schema}` does not match `{rule.pattern}`")


def table_name(subject: Named, rule: NamingRule) -> Iterator[Hit]:
    name = subject.name.split(".")[-1]
    if not _compiled(rule.pattern).fullmatch(name):
        yield Hit((subject.kind,), rule.level, f"{subject.kind} `{name}` does not match `{rule.pattern}`")


def column_name(subject: Named, rule: NamingRule) -> Iterator[Hit]:
    for index, column in enumerate(subject.column_names):
        if not _compiled(rule.pattern).fullmatch(column):
            yield Hit(("columns", index, "name"), rule.level, f"column `{column}` does not match `{rule.pattern}`")


def _same_value(given: str, wanted: str) -> bool:
    # Delta reads its boolean settings in any case; anything else is compared as written.
    if given.lower() in ("true", "false") and wanted.lower() in ("true", "false"):
        return given.lower() == wanted.lower()
    return given == wanted


def required_properties(subject: Subject, rule: RequiredProperties) -> Iterator[Hit]:
    """Each required property as the table gets it: from its spec, else from the project's `defaults:`; a key
    the spec declares null opts out of the default, so is not set."""
    written = {key.lower(): (key, value) for key, value in subject.spec.properties.items()}
    defaults = {key.lower(): value for key, value in subject.defaults.items()}
    for key, wanted in rule.properties.items():
        must = "it must be set" if wanted is None else f'it must be "{wanted}"'
        key_given, given = written.get(key.lower(), (None, None))
        loc = ("properties", key_given) if key_given is not None else subject.where("properties")
        source = ""
        if key_given is None and key.lower() in defaults:
            given, source = defaults[key.lower()], " (from the project's defaults:)"
        if given is None:
            opted = " (the spec opts out of the project's default)" if key.lower() in defaults else ""
            yield Hit(loc, rule.level, f"property `{key}` is not set{opted}; {must}")
        elif wanted is not None and not _same_value(given, wanted):
            yield Hit(loc, rule.level, f'property `{key}` is "{given}"{source}; {must}')


def _types_in(type_: str) -> Iterator[str]:
    """A canonical type and every type nested in it: array elements, map keys and values, struct fields."""
    yield type_
    element = sqltypes.element_type(type_)
    if element is not None:
        yield from _types_in(element)
    pair = sqltypes.map_types(type_)
    if pair is not None:
        yield from _types_in(pair[0])
        yield from _types_in(pair[1])
    for field in sqltypes.struct_fields(type_) or ():
        yield from _types_in(field.type)


def _family(type_: str) -> str:
    return re.split(r"[(<]", type_, maxsplit=1)[0]


def _selection(rule: ForbiddenType) -> str:
    kinds = sorted(set(rule.in_ or []))
    keys = f"in a {kinds[0].replace('-', ' ')}" if len(kinds) == 1 else "in a primary or foreign key" if kinds else ""
    named = f"for columns matching `{rule.columns}`" if rule.columns is not None else ""
    return " ".join(part for part in (named, keys) if part) or "in any column"


def forbidden_types(subject: Subject, rules: list[ForbiddenType]) -> Iterator[Hit]:
    spec = subject.spec
    in_key = {
        "primary-key": {c.lower() for c in spec.primary_key.columns} if spec.primary_key else set(),
        "foreign-key": {c.lower() for fk in spec.foreign_keys for c in fk.columns},
    }
    for index, column in enumerate(spec.columns):
        canonical = _canonical_type(column.type)
        for rule in rules:
            if rule.columns is not None and not _compiled(rule.columns, re.IGNORECASE).search(column.name):
                continue
            if rule.in_ and not any(column.name.lower() in in_key[kind] for kind in rule.in_):
                continue
            found = next((t for t in _types_in(canonical) if t in rule.types or _family(t) in rule.types), None)
            if found is None:
                continue
            held = "" if found == canonical else f" (it holds {found})"
            instead = f"; use {rule.instead}" if rule.instead else ""
            message = f"column `{column.name}` is {canonical}{held}, not allowed {_selection(rule)}{instead}"
            yield Hit(("columns", index, "type"), rule.level, message)


# Each rule of spec_values.LINT_RULES, in its order: its settings in LintSettings, and the function that
# checks a table against them.
RULES: dict[str, tuple[str, Callable[[Subject, Any], Iterator[Hit]]]] = {
    "table-comment": ("table_comment", table_comment),
    "column-comment": ("column_comment", column_comment),
    "primary-key": ("primary_key", primary_key),
    "schema-name": ("schema_name", schema_name),
    "table-name": ("table_name", table_name),
    "column-name": ("column_name", column_name),
    "required-properties": ("required_properties", required_properties),
    "forbidden-types": ("forbidden_types", forbidden_types),
}

# The rules that also check a view spec, with the settings tables have. The others ask for what a view does not
# have (keys, properties), or for what only its query knows offline (its columns' types; their comments, which
# a view takes from the columns it selects).
VIEW_RULES: dict[str, Callable[[ViewSubject, Any], Iterator[Hit]]] = {
    "table-comment": table_comment,
    "schema-name": schema_name,
    "table-name": table_name,
    "column-name": column_name,
}

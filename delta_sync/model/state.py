"""The state model: one type for both sides of the diff (specs -> desired, catalog -> current).

Every value here is already canonical: types in Spark's simple spelling, check names lower-cased,
properties sorted. Comparing two models is therefore plain equality.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from urllib.parse import unquote

DEFAULT_CATALOG = "spark_catalog"
# A dataclass field's metadata key: a saved plan leaves the field out while it holds its default.
OMIT_EMPTY = "omit_empty"
_SIMPLE_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def quote_ident(name: str) -> str:
    """Backquote an identifier for Spark SQL; backticks inside are doubled."""
    return "`" + name.replace("`", "``") + "`"


def is_simple_ident(name: str) -> bool:
    return bool(_SIMPLE_IDENT.match(name))


# Names of one S3 bucket's objects: users write `s3://`, open-source Hadoop reads it as `s3a://` (delta-sync maps
# it so), EMR and Databricks report `s3://`, old Hadoop `s3n://`.
_S3_SCHEMES = frozenset({"s3", "s3a", "s3n"})


def canonical_location(text: str) -> str:
    """One spelling of a table location for comparison: `file:///p`, `file:/p/` and `/p` are the same folder
    (Spark reports local paths as `file:/p`), `%20` is a space, `//` inside the path is one `/`, a scheme in
    any case is one, and `s3://`, `s3n://` and `s3a://` are one bucket (`s3a://`). Other remote locations
    (`abfss://container@account.dfs.core.windows.net/p`, `gs://b/p`) compare as written, less trailing `/`."""
    text = unquote(text.strip())
    if text.startswith("/"):
        text = "file:" + text
    scheme, sep, rest = text.partition(":")
    if not sep:
        return text
    scheme = scheme.lower()
    if scheme in _S3_SCHEMES:
        scheme = "s3a"
    if scheme == "file" and rest.startswith("///"):
        rest = rest[2:]
    authority = ""
    if rest.startswith("//"):
        cut = rest.find("/", 2)
        authority, rest = (rest, "") if cut < 0 else (rest[:cut], rest[cut:])
    path = re.sub("/{2,}", "/", rest)
    path = path.rstrip("/") or "/"
    return f"{scheme}:{authority}{path}"


def same_location(spec: str, read: str | None) -> bool:
    """Whether the spec's location is where the table is. What the spec leaves out, Spark fills in when it
    reports the location: a path without a scheme is on the default filesystem (`/p` may come back as
    `hdfs://nn:8020/p`), a URI without a host on the default one (`hdfs:///p`)."""
    if read is None:
        return False
    want, have = _parts(canonical_location(spec)), _parts(canonical_location(read))
    if spec.strip().startswith("/"):
        return want[2] == have[2]
    if not want[1]:
        return (want[0], want[2]) == (have[0], have[2])
    return want == have


def _parts(location: str) -> tuple[str, str, str]:
    """(scheme, authority, path) of a canonical location."""
    scheme, _sep, rest = location.partition(":")
    if not rest.startswith("//"):
        return scheme, "", rest
    cut = rest.find("/", 2)
    return (scheme, rest[2:], "/") if cut < 0 else (scheme, rest[2:cut], rest[cut:])


@dataclass(frozen=True, slots=True)
class Origin:
    """Where a value was declared, for messages that point at the spec."""

    file: str
    line: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}"


@dataclass(frozen=True, slots=True)
class TableName:
    """A table name, lower-cased: Spark's catalogs are case-insensitive for these parts."""

    catalog: str | None
    schema: str
    name: str

    def __lt__(self, other: TableName) -> bool:
        return (self.catalog or "", self.schema, self.name) < (other.catalog or "", other.schema, other.name)

    @classmethod
    def parse(cls, text: str) -> TableName:
        parts = text.split(".")
        if len(parts) not in (2, 3) or any(not p.strip() for p in parts):
            raise ValueError(f"table name {text!r} must be schema.table or catalog.schema.table")
        for part in parts:
            if not is_simple_ident(part):
                raise ValueError(f"table name part {part!r} must be letters, digits and underscores")
        lowered = [p.lower() for p in parts]
        if len(lowered) == 2 or lowered[0] == DEFAULT_CATALOG:
            # `spark_catalog.s.t` and `s.t` are the same table: keep one spelling of it.
            return cls(None, lowered[-2], lowered[-1])
        return cls(lowered[0], lowered[1], lowered[2])

    @property
    def schema_name(self) -> SchemaName:
        return SchemaName(self.catalog, self.schema)

    def sql(self) -> str:
        parts = [p for p in (self.catalog, self.schema, self.name) if p is not None]
        return ".".join(quote_ident(p) for p in parts)

    def __str__(self) -> str:
        return ".".join(p for p in (self.catalog, self.schema, self.name) if p is not None)


def ignored_by(name: TableName, patterns: Sequence[str]) -> str | None:
    """The first `ignore:` pattern (a glob on `schema.table`, or on `catalog.schema.table` when it has two
    dots; case-insensitive, as table names are) that matches `name`, or None."""
    short = f"{name.schema}.{name.name}"
    full = f"{name.catalog or DEFAULT_CATALOG}.{short}"
    for pattern in patterns:
        lowered = pattern.strip().lower()
        if fnmatch.fnmatchcase(full if lowered.count(".") >= 2 else short, lowered):
            return pattern
    return None


@dataclass(frozen=True, slots=True)
class SchemaName:
    catalog: str | None
    name: str

    def __lt__(self, other: SchemaName) -> bool:
        return (self.catalog or "", self.name) < (other.catalog or "", other.name)

    def sql(self) -> str:
        parts = [p for p in (self.catalog, self.name) if p is not None]
        return ".".join(quote_ident(p) for p in parts)

    def __str__(self) -> str:
        return ".".join(p for p in (self.catalog, self.name) if p is not None)


@dataclass(frozen=True, slots=True)
class Identity:
    start: int = 1
    step: int = 1
    always: bool = True


@dataclass(frozen=True, slots=True)
class Column:
    name: str
    type: str
    nullable: bool = True
    comment: str | None = None
    default: str | None = None
    generated: str | None = None
    identity: Identity | None = None
    origin: Origin | None = field(default=None, compare=False)
    # Spec side only: the column's previous name. Inert once the rename has been applied.
    renamed_from: str | None = field(default=None, compare=False)
    # Current side only: NOT NULL is enforced by delta-sync's CHECK rather than by the schema.
    not_null_by_check: bool = field(default=False, compare=False)
    # Spec side only: the value (SQL over the table's columns) for rows where the column is NULL when it
    # becomes NOT NULL. Inert once applied.
    backfill: str | None = field(default=None, compare=False)
    # Spec side only: how existing values become a type Delta cannot change in place (default CAST).
    # Inert once applied.
    using: str | None = field(default=None, compare=False)

    @property
    def key(self) -> str:
        return self.name.lower()


@dataclass(frozen=True, slots=True)
class Check:
    """A CHECK constraint. `name` is lower-cased (Delta stores it so); `expression` is as written."""

    name: str
    expression: str
    origin: Origin | None = field(default=None, compare=False)


@dataclass(frozen=True, slots=True)
class Allow:
    """A spec's `allow:` entry: one named change of its table let through in every environment that does not
    deny its class (`{drop_column: legacy_code}`): `kind` is the kind of change, `target` what it changes."""

    kind: str
    target: str
    origin: Origin | None = field(default=None, compare=False)

    def text(self) -> str:
        return f"{self.kind}: {self.target}"


@dataclass(frozen=True, slots=True)
class PrimaryKey:
    """A table's primary key: informational in every engine, so delta-sync checks it against the data.
    Column names compare case-insensitively, in order (delta_sync.model.keys)."""

    name: str
    columns: tuple[str, ...]
    origin: Origin | None = field(default=None, compare=False)


@dataclass(frozen=True, slots=True)
class ForeignKey:
    """Columns of this table that reference the primary key (or other columns) of `table`."""

    name: str
    columns: tuple[str, ...]
    table: TableName
    references: tuple[str, ...]
    origin: Origin | None = field(default=None, compare=False)


@dataclass(frozen=True, slots=True)
class Table:
    name: TableName
    columns: tuple[Column, ...]
    comment: str | None = None
    checks: tuple[Check, ...] = ()
    partitioned_by: tuple[str, ...] = ()
    clustered_by: tuple[str, ...] = ()
    properties: tuple[tuple[str, str], ...] = ()
    # Spec side only: keys declared `null`, to be removed if present.
    removed_properties: tuple[str, ...] = ()
    origin: Origin | None = field(default=None, compare=False)
    # Current side only: data files in the latest version (0 means the table holds no rows).
    num_files: int | None = field(default=None, compare=False)
    # Current side only: the Delta table version that was read.
    version: int | None = field(default=None, compare=False)
    # Current side only: bytes of the data files in the latest version (what a rewrite reads and writes).
    size_bytes: int | None = field(default=None, compare=False)
    primary_key: PrimaryKey | None = None
    foreign_keys: tuple[ForeignKey, ...] = ()
    # Current side only: the Delta protocol's (reader, writer) versions; its features are the
    # `delta.feature.*` properties.
    protocol: tuple[int, int] | None = field(default=None, compare=False)
    # Where an external table's files are, as written in the spec or as Spark reports it; None for a managed
    # table. On the spec side None means "wherever the catalog puts it". Compared by same_location.
    location: str | None = field(default=None, compare=False)
    # Spec side only: the table's previous name. Inert once the rename has been applied.
    renamed_from: TableName | None = field(default=None, compare=False)
    # Spec side only: the keys of `properties` that come from the project's `defaults:`, not the spec.
    # Left out of a saved plan while empty (OMIT_EMPTY), so plans without defaults read as before.
    defaulted: tuple[str, ...] = field(default=(), compare=False, metadata={OMIT_EMPTY: True})
    # Spec side only: where the spec says `protect: true` (no plan may drop, rename, rewrite or restore it).
    protected: Origin | None = field(default=None, compare=False, metadata={OMIT_EMPTY: True})
    # Spec side only: the changes of this table its spec lets through by name (`allow:`).
    allows: tuple[Allow, ...] = field(default=(), compare=False, metadata={OMIT_EMPTY: True})

    def column(self, name: str) -> Column | None:
        key = name.lower()
        return next((c for c in self.columns if c.key == key), None)

    def check(self, name: str) -> Check | None:
        key = name.lower()
        return next((c for c in self.checks if c.name == key), None)

    @property
    def property_map(self) -> dict[str, str]:
        return dict(self.properties)


@dataclass(frozen=True, slots=True)
class ViewColumn:
    name: str
    comment: str | None = None
    # Current side: the type the catalog stored for the column, which Spark casts what the query gives to when
    # the view is read (None: unknown, or the spec side). Not part of what a spec declares.
    type: str | None = field(default=None, compare=False, metadata={OMIT_EMPTY: True})


@dataclass(frozen=True, slots=True)
class View:
    """A view: its query as written (compared through viewsql.normalize), comment and column comments."""

    name: TableName
    sql: str
    comment: str | None = None
    # Spec side: None when the spec lists no columns (names and comments come from the query).
    # Current side: every column of the view, in order.
    columns: tuple[ViewColumn, ...] | None = None
    origin: Origin | None = field(default=None, compare=False)
    # Current side: the names the query gave when the view was created, which Spark finds by name in what the
    # query gives when the view is read (None: not recorded). Spec side: None.
    query_columns: tuple[str, ...] | None = field(default=None, compare=False)
    # Spec side only: where the spec says `protect: true` (no plan may drop it, as for a table).
    protected: Origin | None = field(default=None, compare=False, metadata={OMIT_EMPTY: True})
    # Current side only: the view carries the mark of a spec's `protect: true` among its properties
    # (planning.team_policy.PROTECTED_PROPERTY), so a plan made once the spec is gone still knows it.
    marked: bool = field(default=False, compare=False, metadata={OMIT_EMPTY: True})


@dataclass(frozen=True, slots=True)
class Capabilities:
    """What a catalog lets delta-sync do to the Delta tables in it.

    The default is Delta's own session catalog, which accepts every statement delta-sync plans.
    Other catalogs refuse some (Unity Catalog refuses RENAME COLUMN): the planner turns an action
    the catalog refuses into an `unsupported` block, before anything runs.
    """

    # How the catalog is named in messages, e.g. "Unity Catalog".
    kind: str = "Delta session catalog"
    rename_column: bool = True
    drop_column: bool = True
    # Accepts PRIMARY KEY / FOREIGN KEY table constraints as DDL (informational: nothing enforces them).
    # Open-source Delta's session catalog refuses them (UNSUPPORTED_FEATURE.TABLE_OPERATION), so there
    # delta-sync keeps keys in table properties (delta_sync.model.keys).
    table_constraints: bool = False


# Unity Catalog OSS through its Spark connector (io.unitycatalog.spark.UCSingleCatalog, 0.6.0):
# `alterTable` throws for every RENAME COLUMN ("ALTER TABLE RENAME COLUMN is not supported for Unity
# Catalog tables yet") before Delta sees it; every other ALTER delta-sync plans is passed on to Delta.
UNITY_CATALOG = Capabilities(kind="Unity Catalog", rename_column=False, table_constraints=True)


@dataclass(frozen=True, slots=True)
class Consumer:
    """An engine that must keep reading (or, `writes`, writing) the tables: the project file's
    `readers:` / `writers:` entry `<engine> <version>` (delta_sync.planning.compatibility.support_matrix has the
    engines)."""

    engine: str
    # None for an engine named without versions (delta-sharing, uniform-iceberg).
    version: tuple[int, ...] | None
    writes: bool = False
    origin: Origin | None = field(default=None, compare=False)

    @classmethod
    def of_texts(cls, readers: Sequence[str] | None, writers: Sequence[str] | None) -> tuple[Consumer, ...]:
        """The project file's `readers:` and `writers:` entries, as the project checked them
        (`<engine> <major.minor...>`, or `<engine>` alone)."""
        found = []
        for texts, writes in ((readers or (), False), (writers or (), True)):
            for text in texts:
                name, _, version = text.partition(" ")
                parts = tuple(int(part) for part in version.split(".")) if version else None
                found.append(cls(name, parts, writes))
        return tuple(found)

    def text(self) -> str:
        if self.version is None:
            return self.engine
        return f"{self.engine} {'.'.join(str(part) for part in self.version)}"


# --- the team's policy: values only; delta_sync.planning.team_policy decides with them ----------------


@dataclass(frozen=True, slots=True)
class Protection:
    """A `protect:` glob on `schema.table` (or `catalog.schema.table`) and where it is written."""

    pattern: str
    origin: Origin | None = None


@dataclass(frozen=True, slots=True)
class Limit:
    """`limits: {rewrite: 50GB}` (kind: a LIMIT_KINDS entry) or `safe_below: {rewrite: 1GB}` (kind: a hazard
    class): a size in bytes, as written, and where."""

    kind: str
    size: int
    written: str
    origin: Origin | None = None

    def text(self, key: str) -> str:
        where = f" ({self.origin})" if self.origin is not None else ""
        return f"{key}.{self.kind} {self.written}{where}"


@dataclass(frozen=True, slots=True)
class Policy:
    """An environment's policy. Empty (the default) changes nothing a plan decides."""

    protect: tuple[Protection, ...] = ()
    # Hazard classes (their values) nothing may let through here: no --allow, no spec's allow:.
    deny: tuple[str, ...] = ()
    limits: tuple[Limit, ...] = ()
    safe_below: tuple[Limit, ...] = ()
    # Python rules over the reviewed plan (`package.module:function`), in order.
    rules: tuple[str, ...] = field(default=())

    @property
    def empty(self) -> bool:
        return not (self.protect or self.limits or self.safe_below or self.rules)

    def limit(self, kind: str) -> Limit | None:
        return next((limit for limit in self.limits if limit.kind == kind), None)

    def safe(self, hazard: str) -> Limit | None:
        return next((limit for limit in self.safe_below if limit.kind == hazard), None)


@dataclass(frozen=True, slots=True)
class CatalogState:
    """Tables keyed by name, plus the schemas known to exist.

    For the current side this holds only what was asked for: the tables the specs name (absent
    if they don't exist) and whether their schemas exist, and what each catalog named supports
    (a catalog not in `capabilities` supports everything).
    """

    tables: Mapping[TableName, Table]
    schemas: frozenset[SchemaName] = frozenset()
    capabilities: Mapping[str | None, Capabilities] = field(default_factory=dict)
    # Desired side only: the engines that must keep reading or writing these tables.
    consumers: tuple[Consumer, ...] = ()
    # Desired side only: tombstones, the tables to drop (`drop: true`) and where each is declared.
    dropped: Mapping[TableName, Origin] = field(default_factory=dict)
    # Desired side only: which tombstones name a view (`view: ...` + `drop: true`).
    dropped_views: frozenset[TableName] = frozenset()
    # Desired side only: the environment's `strict: true`, every unmanaged table is dropped; where it says so.
    strict: bool = False
    strict_origin: Origin | None = None
    # Current side only: every table and view in the schemas read (None: not listed).
    listed: frozenset[TableName] | None = None
    # Current side only: which of `listed` are views.
    listed_views: frozenset[TableName] = frozenset()
    # Views by name: the specs' (desired), or those read (current).
    views: Mapping[TableName, View] = field(default_factory=dict)
    # Desired side only: the project's `ignore:` patterns, tables and views another tool manages.
    ignore: tuple[str, ...] = ()
    # Desired side only: the spec's column order is the table's (project setting `column_order: ignore`
    # turns it off).
    column_order: bool = True
    # Desired side only: the environment's policy (protect:, deny:, limits:, safe_below:, rules:); None: none.
    policy: Policy | None = None

    def table(self, name: TableName) -> Table | None:
        return self.tables.get(name)

    def names_to_read(self) -> list[TableName]:
        """Desired side: every name whose current state the plan needs (tables, their previous names,
        views, tombstones)."""
        names = set(self.tables) | set(self.dropped) | set(self.views)
        names |= {t.renamed_from for t in self.tables.values() if t.renamed_from is not None}
        return sorted(names)

    def capabilities_of(self, catalog: str | None) -> Capabilities:
        """What the catalog of a table name (None: the session catalog) supports."""
        return self.capabilities.get(catalog) or Capabilities()

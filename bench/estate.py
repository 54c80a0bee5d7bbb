"""The benchmark estate: N realistic table specs, the migration touching all of them, and its hand-written SQL.

Deterministic: table `i` is always the same, so an estate of 200 tables holds the first 50 of it.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

DOMAINS = ("sales", "finance", "ops", "marketing", "people")
ROWS_PER_TABLE = 100

# name -> (type, expression over `id` from range(n) that fills it, an optional check on it)
POOL: dict[str, tuple[str, str, str | None]] = {
    "customer_id": ("bigint", "id % 97", None),
    "amount": ("decimal(18,2)", "CAST(id * 1.5 AS DECIMAL(18,2))", "amount >= 0"),
    "quantity": ("int", "CAST(id % 10 AS INT)", "quantity BETWEEN 0 AND 10000"),
    "status": (
        "string",
        "CASE id % 3 WHEN 0 THEN 'new' WHEN 1 THEN 'paid' ELSE 'shipped' END",
        "status IN ('new', 'paid', 'shipped', 'cancelled')",
    ),
    "score": ("double", "id / 10.0", None),
    "is_active": ("boolean", "id % 2 = 0", None),
    "created_at": ("timestamp", "timestamp_seconds(1700000000 + id)", None),
    "country_code": ("string", "'FR'", "length(country_code) = 2"),
    "note": ("string", "concat('note ', id)", None),
    "tags": ("array<string>", "array('a', 'b')", None),
}
PARTITION = ("event_date", "date", "date_from_unix_date(19700 + CAST(id % 3 AS INT))")

# The migration: the same change on every table.
NEW_COLUMNS = (
    {"name": "ingested_at", "type": "timestamp"},
    {"name": "source_system", "type": "string", "comment": "Where the row came from"},
)
NEW_PROPERTY = ("bench.migrated", "true")
NEW_CHECK = ("id_below_limit", "id < 1000000000")


@dataclass(frozen=True, slots=True)
class TableDef:
    name: str
    spec: dict[str, Any]
    fill: tuple[str, ...]  # one SELECT expression per column, in column order

    @property
    def path(self) -> str:
        schema, table = self.name.split(".")
        return f"{schema}/{table}.yaml"


def table_def(index: int) -> TableDef:
    rng = random.Random(index)
    domain = DOMAINS[index % len(DOMAINS)]
    name = f"{domain}.t{index:04d}_{rng.choice(('orders', 'events', 'ledger', 'visits', 'items'))}"
    partitioned = index % 3 == 0
    picked = rng.sample(sorted(POOL), rng.randint(3, 6 if partitioned else 7))
    columns: list[dict[str, Any]] = [{"name": "id", "type": "bigint", "nullable": False, "comment": "Surrogate key"}]
    fill = ["id"]
    for column in picked:
        kind, expression, _check = POOL[column]
        columns.append({"name": column, "type": kind} | ({"comment": f"The {column}"} if rng.random() < 0.4 else {}))
        fill.append(expression)
    spec: dict[str, Any] = {"table": name, "comment": f"Table {index} of the {domain} domain", "columns": columns}
    if partitioned:
        columns.append({"name": PARTITION[0], "type": PARTITION[1], "nullable": False})
        fill.append(PARTITION[2])
    checks = {"id_non_negative": "id >= 0"}
    checkable = [c for c in picked if POOL[c][2] is not None]
    if checkable:
        column = rng.choice(checkable)
        checks[f"{column}_valid"] = str(POOL[column][2])
    spec["checks"] = checks
    if partitioned:
        spec["partitioned_by"] = [PARTITION[0]]
    properties = {"team.owner": f"{domain}-team", "team.tier": rng.choice(("gold", "silver", "bronze"))}
    if index % 4 == 0:
        properties["delta.logRetentionDuration"] = "interval 30 days"
    if index % 5 == 0:
        properties["delta.enableChangeDataFeed"] = "true"
    spec["properties"] = properties
    return TableDef(name, spec, tuple(fill))


def estate(count: int) -> list[TableDef]:
    return [table_def(i) for i in range(count)]


def migrated(table: TableDef) -> dict[str, Any]:
    spec = dict(table.spec)
    spec["comment"] = f"{spec['comment']} (migrated)"
    spec["columns"] = [*spec["columns"], *NEW_COLUMNS]
    spec["checks"] = {**spec["checks"], NEW_CHECK[0]: NEW_CHECK[1]}
    spec["properties"] = {**spec["properties"], NEW_PROPERTY[0]: NEW_PROPERTY[1]}
    return spec


def write_specs(folder: Path, tables: list[TableDef], *, migrate: bool = False) -> Path:
    for table in tables:
        path = folder / table.path
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.safe_dump(migrated(table) if migrate else table.spec, sort_keys=False))
    return folder


def _quoted(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def create_sql(table: TableDef) -> str:
    """The table as its spec describes it, in one `CREATE TABLE` (one commit, no rows): its CHECK
    rules go in as the `delta.constraints.*` properties Delta keeps them in, so no `ADD CONSTRAINT` follows."""
    spec = table.spec
    columns = ", ".join(
        f"{c['name']} {c['type']}"
        + (" NOT NULL" if c.get("nullable") is False else "")
        + (f" COMMENT {_quoted(c['comment'])}" if "comment" in c else "")
        for c in spec["columns"]
    )
    properties = {**spec["properties"], **{f"delta.constraints.{k}": v for k, v in spec["checks"].items()}}
    listed = ", ".join(f"{_quoted(k)} = {_quoted(v)}" for k, v in properties.items())
    partitioned = f" PARTITIONED BY ({', '.join(spec['partitioned_by'])})" if "partitioned_by" in spec else ""
    return (
        f"CREATE TABLE {table.name} ({columns}) USING delta{partitioned}"
        f" COMMENT {_quoted(spec['comment'])} TBLPROPERTIES ({listed})"
    )


def fill_sql(table: TableDef, rows: int = ROWS_PER_TABLE) -> str:
    return f"INSERT INTO {table.name} SELECT {', '.join(table.fill)} FROM range({rows})"


def migration_sql(table: TableDef) -> list[str]:
    """What someone who knows Delta writes by hand: three statements, three commits."""
    spec = migrated(table)
    added = ", ".join(
        f"{c['name']} {c['type']}" + (f" COMMENT '{c['comment']}'" if "comment" in c else "") for c in NEW_COLUMNS
    )
    return [
        f"ALTER TABLE {table.name} ADD COLUMNS ({added})",
        # Spark's `comment` table property is the table comment: one commit for both.
        f"ALTER TABLE {table.name} SET TBLPROPERTIES ('comment' = '{spec['comment']}', "
        f"'{NEW_PROPERTY[0]}' = '{NEW_PROPERTY[1]}')",
        f"ALTER TABLE {table.name} ADD CONSTRAINT {NEW_CHECK[0]} CHECK ({NEW_CHECK[1]})",
    ]

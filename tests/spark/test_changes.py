"""Every kind of change on a real Delta table that holds rows: the planned statements, convergence
(a second plan is empty) and that no row or value the change does not touch is lost."""

from __future__ import annotations

import io
import itertools
import json
from typing import Any

import pytest
import yaml
from rich.console import Console

from delta_sync.model.errors import UnsafePlanError
from delta_sync.model.state import CatalogState, Identity, Table, TableName
from delta_sync.planning import ddl
from delta_sync.planning.actions import Notice, Plan, RewriteTable
from delta_sync.planning.diff import planner
from delta_sync.planning.hazards import Hazard
from delta_sync.render import text as render
from delta_sync.render.document import plan_json
from delta_sync.review import execution, pipeline, results

from .conftest import Project

Spec = dict[str, Any]


def col(name: str, type_: str, **options: Any) -> Spec:
    return {"name": name, "type": type_, **options}


def write(project: Project, table: str, columns: list[Spec], **rest: Any) -> None:
    """Write the spec of `schema.table` as YAML (file name = the table's own name)."""
    text = yaml.safe_dump({"table": table, "columns": columns, **rest}, sort_keys=False)
    project.write(table.split(".")[-1] + ".yaml", text)


def statements(plan: Plan) -> list[str]:
    return [sql for _a, sql in ddl.plan_statements(plan)]


def kinds(plan: Plan) -> list[str]:
    return [type(a).__name__ for a in plan.actions]


def fingerprint(project: Project, table: str, columns: str, where: str = "true") -> tuple[object, ...]:
    """Row count and a checksum of `columns`: equal before and after a change that keeps them."""
    return project.sql(f"SELECT count(*), sum(hash({columns})) FROM {table} WHERE {where}")[0]


def history(project: Project, table: str) -> int:
    return len(project.sql(f"DESCRIBE HISTORY {table}"))


def read(project: Project, table: str) -> Table:
    name = TableName.parse(table)
    return project.catalog.read([name]).tables[name]


def alter(table: str) -> str:
    return f"ALTER TABLE {TableName.parse(table).sql()}"


def rendered(reviewed: results.Assessed) -> list[str]:
    """The plan as `delta-sync plan` shows it (`render_text` of plan and assessment), as plain text
    lines; soft-wrapped like the CLI's console, so a line is never cut."""
    buffer = io.StringIO()
    console = Console(file=buffer, width=120, soft_wrap=True, color_system=None, highlight=False, theme=render.THEME)
    console.print(render.render_text(reviewed.plan, reviewed.assessment))
    return [line.rstrip() for line in buffer.getvalue().splitlines()]


def assert_blocked(project: Project, table: str, plan: Plan, refusals: dict[str, str]) -> None:
    """The plan is refused as a whole: apply raises and the table gets no new version; and what the
    user reads says so: under a `! blocked <table>` header, one `!` line per refusal holding the text
    that names its column (a key of `refusals`), followed by a `fix:` line holding the way out (its value)."""
    assert plan.blocked
    assert statements(plan) == []
    reviewed = pipeline.review(project.catalog, project.desired())
    assert reviewed.plan == plan
    assert TableName.parse(table) in reviewed.assessment.blocked_tables
    lines = rendered(reviewed)
    header = f"! blocked {TableName.parse(table)}"
    assert header in lines, "\n".join(lines)
    start = lines.index(header) + 1
    end = next((i for i in range(start, len(lines)) if not lines[i].startswith(" ")), len(lines))
    section = lines[start:end]
    for named, remedy in refusals.items():
        found = [
            (why, fix)
            for why, fix in itertools.pairwise(section)
            if why.startswith("    ! ") and named in why and fix.startswith("        fix: ")
        ]
        assert found, f"no refusal naming {named!r} under {header!r}:\n" + "\n".join(lines)
        assert any(remedy in fix for _why, fix in found), f"no way out {remedy!r} for {named!r}:\n" + "\n".join(lines)
    refused = [a for a in plan.blocked if a.name == TableName.parse(table)]
    assert len([line for line in section if line.startswith("        fix: ")]) == len(refused)
    before = history(project, table)
    with pytest.raises(UnsafePlanError):
        execution.apply_plan(project.catalog, plan)
    assert history(project, table) == before


# 1 ---------------------------------------------------------------------------------------------


def test_not_null_at_create_loosen_tighten_and_untighten(project: Project, schema: str) -> None:
    t = f"{schema}.people"
    write(
        project, t, [col("id", "bigint", nullable=False), col("name", "string", nullable=False), col("note", "string")]
    )
    project.apply()
    assert [(c.name, c.nullable) for c in read(project, t).columns] == [
        ("id", False),
        ("name", False),
        ("note", True),
    ]
    project.sql(f"INSERT INTO {t} VALUES (1, 'ann', 'a'), (2, 'bob', 'b'), (3, 'cy', 'c')")
    before = fingerprint(project, t, "id, name, note")

    # Loosen `name`, tighten `note` (existing column: enforced by a CHECK, not SET NOT NULL).
    write(
        project, t, [col("id", "bigint", nullable=False), col("name", "string"), col("note", "string", nullable=False)]
    )
    plan = project.plan()
    # The new rule reads a column the plan leaves alone: it goes first (and is its own data check).
    assert statements(plan) == [
        f"{alter(t)} ADD CONSTRAINT ds_nn_note CHECK (`note` IS NOT NULL)",
        f"{alter(t)} ALTER COLUMN `name` DROP NOT NULL",
    ]
    project.apply()
    assert project.plan().is_empty
    assert fingerprint(project, t, "id, name, note") == before
    state = read(project, t)
    assert [(c.name, c.nullable, c.not_null_by_check) for c in state.columns] == [
        ("id", False, False),
        ("name", True, False),
        ("note", True, True),
    ]
    with pytest.raises(Exception, match="ds_nn_note"):
        project.sql(f"INSERT INTO {t} VALUES (4, 'dan', NULL)")
    project.sql(f"INSERT INTO {t} VALUES (4, NULL, 'd')")  # `name` takes NULL now

    # Rename the CHECK-enforced column: its CHECK moves out of the way and comes back renamed.
    write(
        project,
        t,
        [
            col("id", "bigint", nullable=False),
            col("name", "string"),
            col("memo", "string", nullable=False, renamed_from="note"),
        ],
    )
    assert statements(project.plan()) == [
        f"{alter(t)} SET TBLPROPERTIES ('delta.columnMapping.mode' = 'name')",
        f"{alter(t)} DROP CONSTRAINT ds_nn_note",
        f"{alter(t)} RENAME COLUMN `note` TO `memo`",
        f"{alter(t)} ADD CONSTRAINT ds_nn_memo CHECK (`memo` IS NOT NULL)",
    ]
    project.apply()
    assert project.plan().is_empty

    # Un-tighten it: its CHECK goes.
    write(project, t, [col("id", "bigint", nullable=False), col("name", "string"), col("memo", "string")])
    plan = project.plan()
    assert statements(plan) == [f"{alter(t)} DROP CONSTRAINT ds_nn_memo"]
    project.apply()
    assert project.plan().is_empty
    assert not [k for k in project.properties(t) if k.startswith("delta.constraints.")]
    project.sql(f"INSERT INTO {t} VALUES (5, 'eve', NULL)")
    assert fingerprint(project, t, "id, name, memo", where="id <= 3") == before
    assert project.sql(f"SELECT count(*) FROM {t}") == [(5,)]


# 2 ---------------------------------------------------------------------------------------------


def test_new_not_null_column_on_empty_table_is_added_with_check(project: Project, schema: str) -> None:
    t = f"{schema}.codes"
    write(project, t, [col("id", "bigint")])
    project.apply()
    write(project, t, [col("id", "bigint"), col("code", "string", nullable=False)])
    plan = project.plan()
    assert statements(plan) == [
        f"{alter(t)} ADD COLUMNS (`code` string)",
        f"{alter(t)} ADD CONSTRAINT ds_nn_code CHECK (`code` IS NOT NULL)",
    ]
    project.apply()
    assert project.plan().is_empty
    project.sql(f"INSERT INTO {t} VALUES (1, 'a'), (2, 'b'), (3, 'c')")
    with pytest.raises(Exception, match="ds_nn_code"):
        project.sql(f"INSERT INTO {t} VALUES (4, NULL)")
    assert project.sql(f"SELECT count(*), sum(id) FROM {t}") == [(3, 6)]
    assert project.plan().is_empty


def test_new_not_null_column_on_table_with_rows_is_blocked(project: Project, schema: str) -> None:
    t = f"{schema}.codes"
    write(project, t, [col("id", "bigint"), col("v", "int")])
    project.apply()
    project.sql(f"INSERT INTO {t} VALUES (1, 10), (2, 20), (3, 30)")
    before = fingerprint(project, t, "id, v")

    write(project, t, [col("id", "bigint"), col("v", "int"), col("code", "string", nullable=False)])
    plan = project.plan()
    assert kinds(plan) == ["Unsupported"]
    (blocked,) = plan.blocked
    assert blocked.subject == "code"
    assert "`code`" in blocked.reason
    assert "backfill" in blocked.remedy
    assert_blocked(
        project,
        t,
        plan,
        {
            "new column `code` is NOT NULL": "give those rows a value with `backfill: <SQL expression>` on the column "
            "(e.g. backfill: \"'unknown'\"), or add it as nullable (nullable: true)"
        },
    )
    assert fingerprint(project, t, "id, v") == before

    # The way out the remedy describes converges: nullable, backfill, then NOT NULL.
    write(project, t, [col("id", "bigint"), col("v", "int"), col("code", "string")])
    assert statements(project.apply()) == [f"{alter(t)} ADD COLUMNS (`code` string)"]
    project.sql(f"UPDATE {t} SET code = concat('c', id)")
    write(project, t, [col("id", "bigint"), col("v", "int"), col("code", "string", nullable=False)])
    assert statements(project.apply()) == [f"{alter(t)} ADD CONSTRAINT ds_nn_code CHECK (`code` IS NOT NULL)"]
    assert project.plan().is_empty
    assert fingerprint(project, t, "id, v") == before


# 3 ---------------------------------------------------------------------------------------------


def test_type_widening_and_refused_narrowing(project: Project, schema: str) -> None:
    t = f"{schema}.amounts"
    v1 = {
        "id": "long",
        "n": "int",
        "amount": "decimal(10,2)",
        "f": "float",
        "v": "varchar(10)",
        "dt": "date",
        "big": "bigint",
        "s": "string",
        "m": "map<double,double>",
    }

    def spec(**types: str) -> None:
        write(project, t, [col(name, types.get(name, type_)) for name, type_ in v1.items()])

    spec()
    project.apply()
    project.sql(
        f"INSERT INTO {t} VALUES (1, 7, 1.25, 0.5, 'a', DATE'2026-01-01', 100, '1', map(1.0D, 2.0D)), "
        "(2, 8, 2.50, 1.5, 'bb', DATE'1999-12-31', 200, '2', map(3.0D, 4.0D)), "
        "(3, 2147483647, 99999999.99, NULL, NULL, NULL, 300, 'x', NULL)"
    )
    before = fingerprint(project, t, "id, big, s")
    widened = f"SELECT sum(n), sum(amount), sum(f), sum(hash(v)), sum(hash(CAST(dt AS DATE))), sum(size(m)) FROM {t}"
    values = project.sql(widened)

    # Other spellings of the same types are no change.
    spec(id="bigint", n="integer", amount="numeric(10, 2)", f="real", m="MAP< DOUBLE , Double >")
    assert project.plan().is_empty

    spec(n="bigint", amount="decimal(12,2)", f="double", v="varchar(20)", dt="timestamp_ntz")
    plan = project.plan()
    assert statements(plan) == [
        f"{alter(t)} SET TBLPROPERTIES ('delta.enableTypeWidening' = 'true')",
        f"{alter(t)} SET TBLPROPERTIES ('delta.feature.timestampNtz' = 'supported')",
        f"{alter(t)} ALTER COLUMN `amount` TYPE decimal(12,2)",
        f"{alter(t)} ALTER COLUMN `dt` TYPE timestamp_ntz",
        f"{alter(t)} ALTER COLUMN `f` TYPE double",
        f"{alter(t)} ALTER COLUMN `n` TYPE bigint",
        f"{alter(t)} ALTER COLUMN `v` TYPE varchar(20)",
    ]
    project.apply()
    assert project.plan().is_empty
    spec(n="long", amount="dec(12,2)", f="double", v="VARCHAR(20)", dt="TIMESTAMP_NTZ", m="map<double, double>")
    assert project.plan().is_empty
    assert [c.type for c in read(project, t).columns] == [
        "bigint",
        "bigint",
        "decimal(12,2)",
        "double",
        "varchar(20)",
        "timestamp_ntz",
        "bigint",
        "string",
        "map<double,double>",
    ]
    assert fingerprint(project, t, "id, big, s") == before
    assert project.sql(widened) == values
    # The widened columns take values that did not fit before.
    project.sql(f"INSERT INTO {t} (id, n, amount, v) VALUES (4, 4294967296, 1234567890.12, 'twelve chars')")

    # Narrowing and string -> int cannot be done in place: one rewrite of the table (tests/spark/test_rewrites.py),
    # which the data blocks here: `s` holds 'x', which does not convert, so nothing runs.
    spec(n="long", amount="dec(12,2)", f="double", v="VARCHAR(20)", dt="timestamp_ntz", big="int", s="int")
    plan = project.plan()
    assert kinds(plan) == ["RewriteTable"]
    (rewrite,) = plan.actions
    assert isinstance(rewrite, RewriteTable)
    assert [(c.column, c.before, c.after) for c in rewrite.conversions] == [
        ("big", "bigint", "int"),
        ("s", "string", "int"),
    ]
    reviewed = pipeline.review(project.catalog, project.desired(), [Hazard.REWRITE, Hazard.BREAKING])
    assert [b.why for b in reviewed.assessment.blocks] == [
        "will fail: 1 row holds a `s` that does not convert to int (CAST(`s` AS int) gives NULL)"
    ]
    assert fingerprint(project, t, "id, big, s", where="id <= 3") == before


# 4 ---------------------------------------------------------------------------------------------


def test_rename_column_keeps_its_data(project: Project, schema: str) -> None:
    t = f"{schema}.users"
    write(project, t, [col("id", "bigint"), col("old_name", "string"), col("x", "int")])
    project.apply()
    project.sql(f"INSERT INTO {t} VALUES (1, 'a', 10), (2, 'b', 20), (3, NULL, 30)")
    untouched = fingerprint(project, t, "id, x")
    renamed = fingerprint(project, t, "id, old_name")

    # Declaring the mapping mode as a property too adds no second statement for it.
    write(
        project,
        t,
        [col("id", "bigint"), col("new_name", "string", renamed_from="old_name"), col("x", "int")],
        properties={"delta.columnMapping.mode": "name"},
    )
    plan = project.plan()
    assert statements(plan) == [
        f"{alter(t)} SET TBLPROPERTIES ('delta.columnMapping.mode' = 'name')",
        f"{alter(t)} RENAME COLUMN `old_name` TO `new_name`",
    ]
    project.apply()
    # renamed_from is still in the spec: inert once the rename is done.
    assert project.plan().is_empty
    assert [c.name for c in read(project, t).columns] == ["id", "new_name", "x"]
    assert fingerprint(project, t, "id, x") == untouched
    assert fingerprint(project, t, "id, new_name") == renamed

    # Someone adds the old name back: both exist, which delta-sync will not resolve.
    project.sql(f"ALTER TABLE {t} ADD COLUMNS (old_name string)")
    plan = project.plan()
    assert kinds(plan) == ["Unsupported"]
    assert plan.blocked[0].subject == "new_name"
    assert "both" in plan.blocked[0].reason
    assert "renamed_from" in plan.blocked[0].remedy
    assert_blocked(
        project,
        t,
        plan,
        {
            "`old_name` is to be renamed to `new_name`, but the table has both columns": (
                "drop or rename one of them by hand, or remove `renamed_from: old_name`"
            )
        },
    )
    assert fingerprint(project, t, "id, x") == untouched
    assert fingerprint(project, t, "id, new_name") == renamed


# 5 ---------------------------------------------------------------------------------------------


def test_drop_column_and_case_only_difference_is_a_notice(project: Project, schema: str) -> None:
    t = f"{schema}.contacts"
    write(project, t, [col("id", "bigint"), col("email", "string"), col("gone", "string"), col("a", "int")])
    project.apply()
    project.sql(f"INSERT INTO {t} VALUES (1, 'a@x', 'g1', 1), (2, 'b@x', 'g2', 2), (3, NULL, NULL, 3)")
    before = fingerprint(project, t, "id, email, a")

    write(project, t, [col("id", "bigint"), col("email", "string"), col("a", "int")])
    plan = project.plan()
    assert statements(plan) == [
        f"{alter(t)} SET TBLPROPERTIES ('delta.columnMapping.mode' = 'name')",
        f"{alter(t)} DROP COLUMNS (`gone`)",
    ]
    project.apply()
    assert project.plan().is_empty
    assert [c.name for c in read(project, t).columns] == ["id", "email", "a"]
    assert fingerprint(project, t, "id, email, a") == before

    write(project, t, [col("id", "bigint"), col("Email", "string"), col("a", "int")])
    plan = project.plan()
    assert kinds(plan) == ["Notice"]
    assert isinstance(plan.actions[0], Notice)
    assert plan.actions[0].subject == "email"
    assert "case-insensitive" in plan.actions[0].message
    assert statements(plan) == []
    assert plan.is_empty
    versions = history(project, t)
    execution.apply_plan(project.catalog, plan)
    assert history(project, t) == versions


# 6 ---------------------------------------------------------------------------------------------


def test_nested_struct_array_map_changes(project: Project, schema: str) -> None:
    t = f"{schema}.places"

    def spec(address: str, tags: str, scores: str, attrs: str) -> None:
        columns = [col("id", "bigint"), col("address", address), col("tags", tags), col("scores", scores)]
        write(project, t, [*columns, col("attrs", attrs)])

    spec(
        "struct<street:string NOT NULL,city:string>",
        "array<struct<k:string,v:int>>",
        "array<int>",
        "map<string,int>",
    )
    project.apply()
    project.sql(
        f"INSERT INTO {t} VALUES "
        "(1, named_struct('street', 'Main', 'city', 'X'), array(named_struct('k', 'a', 'v', 1)), array(1), "
        "map('a', 1)), "
        "(2, named_struct('street', 'High', 'city', 'Y'), array(), array(2, 3), map()), "
        # A NULL struct would break `street`'s NOT NULL: Delta checks nested NOT NULL under a NULL parent.
        "(3, named_struct('street', 'Low', 'city', NULL), NULL, NULL, NULL)"
    )
    untouched = fingerprint(project, t, "id, address.street, tags.k, tags.v, map_keys(attrs)")
    sums = f"""SELECT sum(aggregate(scores, 0L, (acc, x) -> acc + x)),
                      sum(aggregate(map_values(attrs), 0L, (acc, x) -> acc + x)) FROM {t}"""
    values = project.sql(sums)

    # Spelled differently (spaces, upper case, aliases): no change.
    spec(
        "STRUCT<Street: STRING NOT NULL, city: String>",
        "ARRAY<STRUCT<k: STRING, v: INTEGER>>",
        "ARRAY<INT>",
        "MAP<STRING, INTEGER>",
    )
    assert project.plan().is_empty
    # Struct fields in another order, inside an array's struct too: moved in place, and back again.
    spec(
        "STRUCT<city: String, Street: STRING NOT NULL>",
        "ARRAY<STRUCT<v: INTEGER, k: STRING>>",
        "ARRAY<INT>",
        "MAP<STRING, INTEGER>",
    )
    moves = statements(project.plan())
    assert len(moves) == 2, moves
    assert all(" ALTER COLUMN " in s and (" FIRST" in s or " AFTER " in s) for s in moves), moves
    project.apply()
    assert project.plan().is_empty
    assert fingerprint(project, t, "id, address.street, tags.k, tags.v, map_keys(attrs)") == untouched
    spec(
        "struct<street:string NOT NULL,city:string>",
        "array<struct<k:string,v:int>>",
        "array<int>",
        "map<string,int>",
    )
    project.apply()
    assert project.plan().is_empty

    # Add, drop, loosen and comment struct fields; add a field inside an array's struct; widen an
    # array element and a map value.
    spec(
        "struct<street:string COMMENT 'the street',zip:string>",
        "array<struct<k:string,v:int,w:int>>",
        "array<bigint>",
        "map<string,bigint>",
    )
    plan = project.plan()
    assert statements(plan) == [
        f"{alter(t)} SET TBLPROPERTIES ('delta.columnMapping.mode' = 'name')",
        f"{alter(t)} SET TBLPROPERTIES ('delta.enableTypeWidening' = 'true')",
        f"{alter(t)} DROP COLUMNS (`address`.`city`)",
        f"{alter(t)} ALTER COLUMN `attrs`.`value` TYPE bigint",
        f"{alter(t)} ALTER COLUMN `scores`.`element` TYPE bigint",
        f"{alter(t)} ALTER COLUMN `address`.`street` DROP NOT NULL",
        f"{alter(t)} ADD COLUMNS (`address`.`zip` string)",
        f"{alter(t)} ADD COLUMNS (`tags`.`element`.`w` int)",
        f"{alter(t)} ALTER COLUMN `address`.`street` COMMENT 'the street'",
    ]
    project.apply()
    assert project.plan().is_empty
    assert [c.type for c in read(project, t).columns][1:] == [
        "struct<street:string COMMENT 'the street',zip:string>",
        "array<struct<k:string,v:int,w:int>>",
        "array<bigint>",
        "map<string,bigint>",
    ]
    assert fingerprint(project, t, "id, address.street, tags.k, tags.v, map_keys(attrs)") == untouched
    assert project.sql(sums) == values
    new_fields = f"SELECT count(*) FROM {t} WHERE address.zip IS NOT NULL OR exists(tags, x -> x.w IS NOT NULL)"
    assert project.sql(new_fields) == [(0,)]
    project.sql(f"INSERT INTO {t} (id, address) VALUES (4, named_struct('street', NULL, 'zip', '123'))")

    # A new NOT NULL struct field cannot be added in place: blocked, nothing runs.
    spec(
        "struct<street:string COMMENT 'the street',zip:string,extra:int NOT NULL>",
        "array<struct<k:string,v:int,w:int>>",
        "array<bigint>",
        "map<string,bigint>",
    )
    plan = project.plan()
    assert kinds(plan) == ["Unsupported"]
    assert plan.blocked[0].subject == "address"
    assert "`address.extra`" in plan.blocked[0].reason
    assert_blocked(
        project,
        t,
        plan,
        {
            "`address.extra` is a new NOT NULL struct field": (
                "keep `type: struct<street:string COMMENT 'the street',zip:string>`, "
                "or say how values convert with `using:` (a rewrite)"
            )
        },
    )


# 7 ---------------------------------------------------------------------------------------------


def test_defaults_set_change_drop_and_new_column_with_default(project: Project, schema: str) -> None:
    t = f"{schema}.tickets"
    write(project, t, [col("id", "bigint"), col("status", "string"), col("qty", "int")])
    project.apply()
    project.sql(f"INSERT INTO {t} VALUES (1, 'a', 1), (2, 'b', 2), (3, NULL, 3)")
    before = fingerprint(project, t, "id, status, qty")

    write(
        project,
        t,
        [
            col("id", "bigint"),
            col("status", "string", default="'new'"),
            col("qty", "int"),
            col("priority", "int", default=5),
        ],
    )
    plan = project.plan()
    assert statements(plan) == [
        f"{alter(t)} SET TBLPROPERTIES ('delta.feature.allowColumnDefaults' = 'supported')",
        f"{alter(t)} ADD COLUMNS (`priority` int)",
        f"{alter(t)} ALTER COLUMN `priority` SET DEFAULT 5",
        f"{alter(t)} ALTER COLUMN `status` SET DEFAULT 'new'",
    ]
    project.apply()
    assert project.plan().is_empty
    assert fingerprint(project, t, "id, status, qty") == before
    assert project.sql(f"SELECT count(*) FROM {t} WHERE priority IS NULL") == [(3,)]
    project.sql(f"INSERT INTO {t} (id, qty) VALUES (10, 1)")
    assert project.sql(f"SELECT status, priority FROM {t} WHERE id = 10") == [("new", 5)]

    # Change one default, drop the other.
    write(
        project,
        t,
        [col("id", "bigint"), col("status", "string", default="'open'"), col("qty", "int"), col("priority", "int")],
    )
    plan = project.plan()
    assert statements(plan) == [
        f"{alter(t)} ALTER COLUMN `priority` DROP DEFAULT",
        f"{alter(t)} ALTER COLUMN `status` SET DEFAULT 'open'",
    ]
    project.apply()
    assert project.plan().is_empty
    project.sql(f"INSERT INTO {t} (id, qty) VALUES (11, 1)")
    assert project.sql(f"SELECT status, priority FROM {t} WHERE id = 11") == [("open", None)]
    assert fingerprint(project, t, "id, status, qty", where="id <= 3") == before
    assert project.sql(f"SELECT count(*) FROM {t}") == [(5,)]


# 8 ---------------------------------------------------------------------------------------------


def test_generated_and_identity_columns(project: Project, schema: str) -> None:
    t = f"{schema}.events"

    def columns(start: int, generated: str) -> list[Spec]:
        return [
            col("id", "bigint", identity={"start": start, "step": 5, "always": True}),
            col("ts", "timestamp"),
            col("day", "date", generated=generated),
            col("v", "int"),
        ]

    write(project, t, columns(10, "CAST(ts AS DATE)"))
    # Counting down, and BY DEFAULT (explicit values allowed).
    by_default = f"{schema}.events_by_default"
    write(
        project,
        by_default,
        [col("id", "bigint", identity={"start": -1, "step": -1, "always": False}), col("v", "int")],
    )
    project.apply()
    assert project.plan().is_empty
    project.sql(f"INSERT INTO {by_default} (v) VALUES (1), (2), (3)")
    project.sql(f"INSERT INTO {by_default} (id, v) VALUES (100, 4)")
    assert project.sql(f"SELECT id FROM {by_default} ORDER BY v") == [(-1,), (-2,), (-3,), (100,)]
    assert read(project, by_default).columns[0].identity == Identity(start=-1, step=-1, always=False)
    assert project.plan().is_empty
    state = read(project, t)
    assert state.columns[0].identity is not None
    assert (state.columns[0].identity.start, state.columns[0].identity.step) == (10, 5)
    assert state.columns[2].generated is not None

    project.sql(
        f"INSERT INTO {t} (ts, v) VALUES (TIMESTAMP'2026-01-01 10:00:00', 1), "
        "(TIMESTAMP'2026-01-02 23:59:59', 2), (TIMESTAMP'2026-01-03 00:00:00', 3)"
    )
    rows = project.sql(f"SELECT id, day = CAST(ts AS DATE), CAST(day AS STRING) FROM {t} ORDER BY v")
    assert [r[0] for r in rows] == [10, 15, 20]
    assert [r[1:] for r in rows] == [(True, "2026-01-01"), (True, "2026-01-02"), (True, "2026-01-03")]
    assert project.plan().is_empty  # the identity's high-water mark moved: no diff
    with pytest.raises(Exception, match=r"(?i)identity"):
        project.sql(f"INSERT INTO {t} (id, ts, v) VALUES (1, TIMESTAMP'2026-01-04 00:00:00', 4)")
    before = fingerprint(project, t, "id, ts, day, v")

    # Same expression spelled differently: no change.
    write(project, t, columns(10, "cast( TS as date )"))
    assert project.plan().is_empty

    write(project, t, columns(100, "to_date(ts)"))
    plan = project.plan()
    assert kinds(plan) == ["Unsupported", "Unsupported"]
    assert [a.subject for a in plan.blocked] == ["day", "id"]
    assert "start 10" in plan.blocked[1].reason
    assert "start 100" in plan.blocked[1].reason
    assert "to_date(ts)" in plan.blocked[0].reason
    rebuild = "keep the spec as the table is, or rebuild the table by hand (CREATE OR REPLACE ... AS SELECT)"
    assert_blocked(
        project,
        t,
        plan,
        {
            "column `day` changes its generation or identity (generated as CAST(ts AS DATE) -> "
            "generated as to_date(ts))": rebuild,
            "column `id` changes its generation or identity (identity always (start 10, step 5) -> "
            "identity always (start 100, step 5))": rebuild,
        },
    )
    assert fingerprint(project, t, "id, ts, day, v") == before


# 9 ---------------------------------------------------------------------------------------------


def test_clustering_and_partitioning_changes(project: Project, schema: str) -> None:
    c, p = f"{schema}.clustered", f"{schema}.parted"

    def clustered(keys: list[str], evolved: bool = False) -> None:
        extra: dict[str, Any] = {"clustered_by": keys} if keys else {}
        columns = [col("id", "bigint"), col("a", "string"), col("b", "int"), col("d", "date")]
        if evolved:  # `b` dropped, `e` added
            columns = [*(x for x in columns if x["name"] != "b"), col("e", "int")]
        write(project, c, columns, **extra)

    def parted(keys: list[str]) -> None:
        write(project, p, [col("id", "bigint"), col("x", "string"), col("y", "string")], partitioned_by=keys)

    clustered(["a", "b"])
    parted(["x"])
    plan = project.apply()
    creates = statements(plan)
    assert creates[0] == f"CREATE SCHEMA IF NOT EXISTS `{schema}`"
    assert creates[1].endswith(") USING DELTA\nCLUSTER BY (`a`, `b`)")
    assert creates[2].endswith(") USING DELTA\nPARTITIONED BY (`x`)")
    assert read(project, c).clustered_by == ("a", "b")
    project.sql(f"INSERT INTO {c} VALUES (1, 'a', 1, DATE'2026-01-01'), (2, 'b', 2, NULL), (3, NULL, 3, NULL)")
    project.sql(f"INSERT INTO {p} VALUES (1, 'x1', 'y1'), (2, 'x1', 'y2'), (3, 'x2', NULL)")
    before_c = fingerprint(project, c, "id, a, d")
    before_p = fingerprint(project, p, "id, x, y")

    clustered(["B", "a"])  # order and case of the keys are no change
    assert project.plan().is_empty

    clustered(["d"])  # other existing keys: one statement
    assert statements(project.plan()) == [f"{alter(c)} CLUSTER BY (`d`)"]

    # Keep `a`, drop the key `b`, cluster by the new column `e`: Delta drops a column only once it
    # no longer clusters, and clusters only by columns that exist, so the keys change twice.
    clustered(["a", "e"], evolved=True)
    assert statements(project.plan()) == [
        f"{alter(c)} SET TBLPROPERTIES ('delta.columnMapping.mode' = 'name')",
        f"{alter(c)} CLUSTER BY (`a`)",
        f"{alter(c)} DROP COLUMNS (`b`)",
        f"{alter(c)} ADD COLUMNS (`e` int)",
        f"{alter(c)} CLUSTER BY (`a`, `e`)",
    ]
    project.apply()
    assert project.plan().is_empty
    assert read(project, c).clustered_by == ("a", "e")

    clustered([], evolved=True)
    assert statements(project.plan()) == [f"{alter(c)} CLUSTER BY NONE"]
    project.apply()
    assert project.plan().is_empty
    assert read(project, c).clustered_by == ()
    assert fingerprint(project, c, "id, a, d") == before_c

    # A new partitioning is a rewrite of the table (tests/spark/test_rewrites.py), keeping every row.
    parted(["y"])
    plan = project.plan()
    assert kinds(plan) == ["RewriteTable"]
    (rewrite,) = plan.actions
    assert isinstance(rewrite, RewriteTable)
    assert rewrite.partitioned_by == ("y",)
    assert rewrite.reasons == (
        "the layout changes (partitioned by x) -> (partitioned by y): Delta cannot repartition a table in place",
    )
    project.apply()
    assert project.plan().is_empty
    assert read(project, p).partitioned_by == ("y",)
    assert fingerprint(project, p, "id, x, y") == before_p


# 10 --------------------------------------------------------------------------------------------


def test_properties_set_remove_and_spellings_that_are_no_change(project: Project, schema: str) -> None:
    t = f"{schema}.props"
    columns = [col("id", "bigint"), col("v", "string")]
    write(
        project,
        t,
        columns,
        properties={
            "team": "sales",
            "tier": "gold",
            "delta.appendOnly": "true",
            "delta.feature.allowColumnDefaults": "supported",
        },
    )
    project.apply()
    project.sql(f"INSERT INTO {t} VALUES (1, 'a'), (2, 'b'), (3, 'c')")
    before = fingerprint(project, t, "id, v")
    # Delta reports features (appendOnly, invariants, ...) the spec never names: not a diff.
    assert any(
        k.startswith("delta.feature.") and k != "delta.feature.allowColumnDefaults"
        for k, _v in read(project, t).properties
    )
    assert project.plan().is_empty

    write(
        project,
        t,
        columns,
        properties={
            "team": None,  # present: removed
            "ghost": None,  # absent: nothing to do
            "tier": "platinum",
            "cost_center": "42",
            "delta.appendOnly": "TRUE",  # stored as `true`
            "delta.feature.allowColumnDefaults": "supported",
        },
    )
    plan = project.plan()
    assert statements(plan) == [
        f"{alter(t)} SET TBLPROPERTIES ('cost_center' = '42', 'tier' = 'platinum')",
        f"{alter(t)} UNSET TBLPROPERTIES ('team')",
    ]
    project.apply()
    assert project.plan().is_empty
    stored = project.properties(t)
    assert "team" not in stored
    assert (stored["tier"], stored["cost_center"], stored["delta.appendOnly"]) == ("platinum", "42", "true")
    assert fingerprint(project, t, "id, v") == before


# 11 --------------------------------------------------------------------------------------------


def test_checks_on_renamed_retyped_and_dropped_columns_go_around_the_change(project: Project, schema: str) -> None:
    t = f"{schema}.stock"
    write(
        project,
        t,
        [
            col("id", "bigint"),
            col("qty", "int"),
            col("price", "decimal(10,2)"),
            col("legacy", "string"),
            col("code", "string"),
        ],
        checks={
            "id_pos": "id > 0",
            "qty_pos": "qty > 0",
            "legacy_ok": "legacy IS NULL OR legacy <> 'x'",
            "code_len": "length(code) <= 10",
        },
    )
    project.apply()
    project.sql(f"INSERT INTO {t} VALUES (1, 5, 1.50, 'l', 'c1'), (2, 6, 2.50, NULL, 'c2'), (3, 7, 3.50, 'm', 'c3')")
    untouched = fingerprint(project, t, "id, price")
    renamed = fingerprint(project, t, "id, code")
    qty = project.sql(f"SELECT sum(qty) FROM {t}")

    write(
        project,
        t,
        [
            col("id", "bigint"),
            col("qty", "bigint"),
            col("price", "decimal(10,2)"),
            col("sku", "string", renamed_from="code"),
        ],
        checks={"id_pos": "id > 0", "qty_pos": "qty > 0", "code_len": "length(sku) <= 10"},
    )
    plan = project.plan()
    assert statements(plan) == [
        f"{alter(t)} SET TBLPROPERTIES ('delta.columnMapping.mode' = 'name')",
        f"{alter(t)} SET TBLPROPERTIES ('delta.enableTypeWidening' = 'true')",
        f"{alter(t)} DROP CONSTRAINT code_len",
        f"{alter(t)} DROP CONSTRAINT legacy_ok",
        f"{alter(t)} DROP CONSTRAINT qty_pos",
        f"{alter(t)} RENAME COLUMN `code` TO `sku`",
        f"{alter(t)} DROP COLUMNS (`legacy`)",
        f"{alter(t)} ALTER COLUMN `qty` TYPE bigint",
        f"{alter(t)} ADD CONSTRAINT code_len CHECK (length(sku) <= 10)",
        f"{alter(t)} ADD CONSTRAINT qty_pos CHECK (qty > 0)",
    ]
    project.apply()
    assert project.plan().is_empty
    stored = project.properties(t)
    assert sorted(k for k in stored if k.startswith("delta.constraints.")) == [
        "delta.constraints.code_len",
        "delta.constraints.id_pos",
        "delta.constraints.qty_pos",
    ]
    assert fingerprint(project, t, "id, price") == untouched
    assert fingerprint(project, t, "id, sku") == renamed
    assert project.sql(f"SELECT sum(qty) FROM {t}") == qty
    with pytest.raises(Exception, match="qty_pos"):
        project.sql(f"INSERT INTO {t} VALUES (4, 0, 1.00, 'c4')")


# 12 --------------------------------------------------------------------------------------------


def test_many_columns_and_properties_take_one_commit_each(project: Project, schema: str) -> None:
    t = f"{schema}.wide"
    write(project, t, [col("id", "bigint"), col("a", "string")])
    project.apply()
    project.sql(f"INSERT INTO {t} VALUES (1, 'a'), (2, 'b'), (3, 'c')")
    before = fingerprint(project, t, "id, a")
    versions = history(project, t)

    write(
        project,
        t,
        [
            col("id", "bigint"),
            col("a", "string"),
            col("c1", "int"),
            col("c2", "string", comment="two"),
            col("c3", "date"),
        ],
        properties={"p1": "x", "p2": "y", "p3": "z"},
        comment="Wide 'one'",
    )
    plan = project.plan()
    assert statements(plan) == [
        f"{alter(t)} ADD COLUMNS (`c1` int, `c2` string COMMENT 'two', `c3` date)",
        f"{alter(t)} SET TBLPROPERTIES ('p1' = 'x', 'p2' = 'y', 'p3' = 'z', 'comment' = 'Wide \\'one\\'')",
    ]
    project.apply()
    assert project.plan().is_empty
    assert history(project, t) == versions + 2
    assert fingerprint(project, t, "id, a") == before
    assert read(project, t).comment == "Wide 'one'"
    assert "comment" not in read(project, t).property_map


# 13 --------------------------------------------------------------------------------------------


def test_three_step_evolution_converges_each_time(project: Project, schema: str) -> None:
    t = f"{schema}.orders"
    write(
        project,
        t,
        [col("id", "bigint", nullable=False), col("name", "string"), col("amount", "int"), col("note", "string")],
        checks={"amount_pos": "amount >= 0"},
        properties={"team": "a"},
    )
    project.apply()
    project.sql(f"INSERT INTO {t} VALUES (1, 'n1', 10, 'x'), (2, 'n2', 20, NULL), (3, 'n3', 30, 'z')")
    ids = fingerprint(project, t, "id")
    names = fingerprint(project, t, "id, name")
    amounts = project.sql(f"SELECT sum(amount) FROM {t}")

    # v2: rename, widen, a new column with a default, a changed property.
    write(
        project,
        t,
        [
            col("id", "bigint", nullable=False),
            col("full_name", "string", renamed_from="name"),
            col("amount", "bigint"),
            col("note", "string"),
            col("status", "string", default="'new'"),
        ],
        checks={"amount_pos": "amount >= 0"},
        properties={"team": "b"},
    )
    assert kinds(project.plan()) == [
        "EnableFeature",
        "EnableFeature",
        "EnableFeature",
        "DropCheck",
        "RenameColumn",
        "AlterColumnType",
        "AddColumns",
        "SetDefault",
        "SetProperties",
        "AddCheck",
    ]
    project.apply()
    assert project.plan().is_empty
    assert fingerprint(project, t, "id, full_name") == names
    assert project.sql(f"SELECT sum(amount) FROM {t}") == amounts

    # v3: drop a column, cluster, tighten the renamed column, remove a property.
    write(
        project,
        t,
        [
            col("id", "bigint", nullable=False),
            col("full_name", "string", nullable=False),
            col("amount", "bigint"),
            col("status", "string", default="'new'"),
        ],
        checks={"amount_pos": "amount >= 0"},
        clustered_by=["id"],
        properties={"team": None},
    )
    plan = project.plan()
    assert kinds(plan) == ["AddCheck", "DropColumns", "UnsetProperties", "ClusterBy"]
    assert statements(plan)[0] == f"{alter(t)} ADD CONSTRAINT ds_nn_full_name CHECK (`full_name` IS NOT NULL)"
    project.apply()
    assert project.plan().is_empty
    state = read(project, t)
    assert [c.name for c in state.columns] == ["id", "full_name", "amount", "status"]
    assert state.clustered_by == ("id",)
    assert "team" not in state.property_map
    assert fingerprint(project, t, "id") == ids
    assert fingerprint(project, t, "id, full_name") == names
    assert project.sql(f"SELECT sum(amount), count(status) FROM {t}") == [(amounts[0][0], 0)]


# 14 --------------------------------------------------------------------------------------------


def test_same_specs_same_state_give_byte_identical_json(project: Project, schema: str) -> None:
    a, b = f"{schema}.alpha", f"{schema}.beta"
    write(
        project,
        a,
        [col("id", "int"), col("x", "string"), col("y", "string")],
        checks={"x_ok": "x <> ''"},
        properties={"k1": "v1", "k2": "v2"},
    )
    write(project, b, [col("id", "bigint"), col("z", "string")], clustered_by=["id"])
    project.apply()
    project.sql(f"INSERT INTO {a} VALUES (1, 'a', 'b'), (2, 'c', 'd'), (3, 'e', NULL)")

    write(
        project,
        a,
        [
            col("id", "bigint"),
            col("x2", "string", renamed_from="x", nullable=False),
            col("w", "int", default=1),
            col("v", "string"),
        ],
        checks={"x_ok": "x2 <> ''", "id_pos": "id > 0"},
        properties={"k1": None, "k2": "v3", "k0": "new"},
    )
    write(project, b, [col("id", "long"), col("z", "int"), col("q", "string")], clustered_by=["z", "q"])
    first = json.dumps(plan_json(project.plan()), ensure_ascii=False)
    second = json.dumps(plan_json(project.plan()), ensure_ascii=False)
    assert first == second
    # Nor does the order the specs were read in matter.
    desired = project.desired()
    current = project.catalog.read(desired.tables)
    backwards = CatalogState(tables=dict(reversed(list(desired.tables.items()))))
    assert json.dumps(plan_json(planner.plan(current, backwards)), ensure_ascii=False) == first
    assert len(json.loads(first)["actions"]) > 10


# Edge cases found while writing the above ------------------------------------------------------


def test_not_null_on_an_oddly_named_column_converges(project: Project, schema: str) -> None:
    t = f"{schema}.odd"
    odd = "it's`odd"
    write(project, t, [col("id", "bigint"), col(odd, "string")])
    project.apply()
    project.sql(f"INSERT INTO {t} VALUES (1, 'a'), (2, 'b'), (3, 'c')")
    before = fingerprint(project, t, "*")

    write(project, t, [col("id", "bigint"), col(odd, "string", nullable=False)])
    (sql,) = statements(project.plan())
    assert sql.startswith(f"{alter(t)} ADD CONSTRAINT ds_nn_it_s_odd_")
    assert sql.endswith(" CHECK (`it's``odd` IS NOT NULL)")
    project.apply()
    assert project.plan().is_empty
    assert fingerprint(project, t, "*") == before
    with pytest.raises(Exception, match="ds_nn_it_s_odd_"):
        project.sql(f"INSERT INTO {t} VALUES (4, NULL)")


def test_table_feature_spelled_enabled_converges(project: Project, schema: str) -> None:
    t = f"{schema}.feat"
    write(project, t, [col("id", "bigint")], properties={"delta.feature.deletionVectors": "enabled"})
    project.apply()
    project.sql(f"INSERT INTO {t} VALUES (1), (2), (3)")
    assert read(project, t).property_map["delta.feature.deletionVectors"] == "supported"
    assert project.plan().is_empty


def test_null_for_a_table_feature_plans_its_drop(project: Project, schema: str) -> None:
    t = f"{schema}.feat"
    write(project, t, [col("id", "bigint")], properties={"delta.feature.deletionVectors": "supported"})
    project.apply()
    write(project, t, [col("id", "bigint")], properties={"delta.feature.deletionVectors": None})
    # Applied, and re-planned empty, on real Delta in test_compatibility.py.
    assert statements(project.plan()) == [f"{alter(t)} DROP FEATURE `deletionVectors`"]


def test_renaming_a_partition_or_clustering_column(project: Project, schema: str) -> None:
    c, p = f"{schema}.clustered", f"{schema}.parted"
    write(project, c, [col("id", "bigint"), col("region", "string")], clustered_by=["region"])
    write(project, p, [col("id", "bigint"), col("region", "string")], partitioned_by=["region"])
    project.apply()
    for t in (c, p):
        project.sql(f"INSERT INTO {t} VALUES (1, 'north'), (2, 'south'), (3, 'south')")
    before = fingerprint(project, c, "id, region"), fingerprint(project, p, "id, region")

    renamed = [col("id", "bigint"), col("area", "string", renamed_from="region")]
    write(project, c, renamed, clustered_by=["area"])
    write(project, p, renamed, partitioned_by=["area"])
    plan = project.plan()
    # Delta renames partition and clustering columns in place under column mapping.
    assert statements(plan) == [
        f"{alter(c)} SET TBLPROPERTIES ('delta.columnMapping.mode' = 'name')",
        f"{alter(c)} RENAME COLUMN `region` TO `area`",
        f"{alter(p)} SET TBLPROPERTIES ('delta.columnMapping.mode' = 'name')",
        f"{alter(p)} RENAME COLUMN `region` TO `area`",
    ]
    project.apply()
    assert project.plan().is_empty
    assert (read(project, c).clustered_by, read(project, p).partitioned_by) == (("area",), ("area",))
    assert (fingerprint(project, c, "id, area"), fingerprint(project, p, "id, area")) == before


def test_rename_or_drop_of_a_generated_columns_source_is_blocked(project: Project, schema: str) -> None:
    t = f"{schema}.events"
    day = col("day", "date", generated="CAST(ts AS DATE)")
    write(project, t, [col("id", "bigint"), col("ts", "timestamp"), day, col("note", "string")])
    project.apply()
    project.sql(
        f"INSERT INTO {t} (id, ts, note) VALUES (1, TIMESTAMP'2026-01-01 10:00:00', 'a'), "
        "(2, TIMESTAMP'2026-01-02 10:00:00', 'b'), (3, NULL, 'c')"
    )
    before = fingerprint(project, t, "id, ts, day, note")

    # Drop `ts` (keeping `day`), then rename it.
    for columns, refusal in (
        (
            [col("id", "bigint"), day, col("note", "string")],
            {
                "generated column(s) day compute from `ts`, so Delta cannot drop it": (
                    "keep `ts` in the spec, or drop the generated column(s) first"
                )
            },
        ),
        (
            [col("id", "bigint"), col("created_at", "timestamp", renamed_from="ts"), day, col("note", "string")],
            {
                "generated column(s) day compute from `ts`, so Delta cannot rename it": (
                    "keep the name `ts`, or rebuild the table by hand"
                )
            },
        ),
    ):
        write(project, t, columns)
        plan = project.plan()
        assert any("`ts`" in a.reason and "day" in a.reason for a in plan.blocked), kinds(plan)
        assert_blocked(project, t, plan, refusal)
    assert fingerprint(project, t, "id, ts, day, note") == before
    assert "delta.columnMapping.mode" not in project.properties(t)

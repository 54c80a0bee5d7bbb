"""The whole catalog, without an engine: table renames, tombstones, locations, unmanaged tables and strict mode,
views (specs, planning, DDL, the decisions around the engine's analysis), and what the other modules make of them."""

from __future__ import annotations

import dataclasses
import importlib
import textwrap
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

import pytest

from delta_sync.model.catalog import Catalog
from delta_sync.model.errors import SpecError, SpecProblem
from delta_sync.model.state import (
    CatalogState,
    ForeignKey,
    Origin,
    SchemaName,
    Table,
    TableName,
    View,
    ViewColumn,
    canonical_location,
)
from delta_sync.planning import ddl, hazard_policy, rehearsal, statements
from delta_sync.planning.actions import (
    Action,
    AddColumns,
    AddForeignKey,
    AlterColumnType,
    BreaksView,
    CreateSchema,
    CreateTable,
    CreateView,
    DropColumns,
    EnableFeature,
    Plan,
    RemoveTable,
    RenameTable,
    SetTableComment,
    Summary,
    Unsupported,
)
from delta_sync.planning.diff.planner import plan, renamed_current
from delta_sync.planning.hazards import Hazard
from delta_sync.render.actions import action_lines
from delta_sync.render.counts import unmanaged_text
from delta_sync.render.document import plan_json
from delta_sync.review import views
from delta_sync.specs import importer
from delta_sync.specs.spec_files import load_spec_files, load_specs
from delta_sync.specs.spec_models import spec_json_schema
from tests.unit.builders import col, live, name, table

SPEC = Origin("specs/s/t.yaml", 1)
VIEW_SPEC = Origin("specs/s/v.yaml", 1)
S = SchemaName(None, "s")


def desired(
    *tables: Table,
    views: tuple[View, ...] = (),
    dropped: Mapping[TableName, Origin] | None = None,
    strict: bool = False,
    dropped_views: frozenset[TableName] = frozenset(),
) -> CatalogState:
    return CatalogState(
        tables={t.name: t for t in tables},
        views={v.name: v for v in views},
        dropped=dict(dropped or {}),
        strict=strict,
        dropped_views=dropped_views,
    )


def current(
    *tables: Table,
    views: tuple[View, ...] = (),
    listed: frozenset[TableName] | None = None,
    listed_views: frozenset[TableName] = frozenset(),
) -> CatalogState:
    """The catalog as read: schema `s` exists."""
    return CatalogState(
        tables={t.name: t for t in tables},
        schemas=frozenset({S}),
        views={v.name: v for v in views},
        listed=listed,
        listed_views=listed_views,
    )


def kinds(actions: tuple[Action, ...]) -> list[tuple[str, str]]:
    return [(type(a).__name__, str(a.schema if isinstance(a, CreateSchema) else a.name)) for a in actions]


def view(text: str, sql: str, **options: Any) -> View:
    return View(name(text), sql, **options)


# --- canonical_location -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("written", "canonical"),
    [
        ("/data/t", "file:/data/t"),
        ("/data/t/", "file:/data/t"),
        ("file:///data/t", "file:/data/t"),
        ("file:/data/t/", "file:/data/t"),
        ("  s3://bucket/t/  ", "s3a://bucket/t"),
        ("s3a://bucket/t/", "s3a://bucket/t"),
        ("S3N://bucket/t", "s3a://bucket/t"),
        ("abfss://lake@acct.dfs.core.windows.net/t/", "abfss://lake@acct.dfs.core.windows.net/t"),
        ("gs://bucket//t/", "gs://bucket/t"),
        ("file://host/p", "file://host/p"),
        ("/", "file:/"),
    ],
)
def test_canonical_location_has_one_spelling_of_a_folder(written: str, canonical: str) -> None:
    assert canonical_location(written) == canonical


# --- renamed_from -------------------------------------------------------------------------------------


def old_orders() -> Table:
    return live(table("s.old", col("id", "bigint"), col("a")), num_files=3, size_bytes=100)


def new_orders() -> Table:
    spec = table("s.new", col("id", "bigint"), col("a"), col("b"), comment="hi", origin=SPEC)
    return dataclasses.replace(spec, renamed_from=name("s.old"))


def test_a_rename_comes_first_and_the_rest_of_the_diff_is_under_the_new_name() -> None:
    result = plan(current(old_orders()), desired(new_orders()))

    assert result.actions == (
        RenameTable(name("s.new"), name("s.old"), SPEC),
        AddColumns(name("s.new"), (col("b"),)),
        SetTableComment(name("s.new"), None, "hi", SPEC),
    )
    assert result.tables == (name("s.new"),)
    assert result.read_names == (name("s.new"), name("s.old"))
    assert result.summary == Summary(create=0, change=1, unchanged=0, blocked=0)


def test_a_rename_is_inert_once_applied() -> None:
    renamed = dataclasses.replace(old_orders(), name=name("s.new"))

    result = plan(current(renamed), desired(new_orders()))

    assert kinds(result.actions) == [("AddColumns", "s.new"), ("SetTableComment", "s.new")]
    assert result.read_names == (name("s.new"),)


def test_a_rename_of_a_table_already_renamed_and_unchanged_plans_nothing() -> None:
    spec = dataclasses.replace(table("s.new", col("id", "bigint")), renamed_from=name("s.old"))

    assert plan(current(live(table("s.new", col("id", "bigint")))), desired(spec)).is_empty


def test_a_rename_when_both_names_exist_is_unsupported() -> None:
    both = current(old_orders(), dataclasses.replace(old_orders(), name=name("s.new")))

    result = plan(both, desired(new_orders()))

    assert result.blocked == (
        Unsupported(
            name("s.new"),
            "",
            "the spec renames `s.old` to `s.new`, but both exist",
            "drop the table that should not exist (a tombstone spec: table: ..., drop: true), "
            "or remove renamed_from: if `s.new` is already the table",
            SPEC,
        ),
    )
    assert not any(isinstance(a, RenameTable) for a in result.actions)


def test_a_table_renamed_from_a_name_that_does_not_exist_is_created() -> None:
    result = plan(current(), desired(new_orders()))

    assert kinds(result.actions) == [("CreateTable", "s.new")]
    assert result.read_names == (name("s.new"),)


def test_renamed_current_finds_the_renamed_table_under_its_new_name_with_its_current_name() -> None:
    before = current(old_orders())
    result = plan(before, desired(new_orders()))

    seen = renamed_current(before, result)

    assert set(seen.tables) == {name("s.old"), name("s.new")}
    assert seen.tables[name("s.new")] is before.tables[name("s.old")]
    assert seen.tables[name("s.new")].name == name("s.old")
    assert before.tables.keys() == {name("s.old")}  # the state given is not changed


def test_renamed_current_without_a_rename_is_the_same_state() -> None:
    before = current(old_orders())

    assert renamed_current(before, Plan((), ())) is before
    # a rename whose previous table is not read changes nothing either
    assert renamed_current(before, Plan((RenameTable(name("s.x"), name("s.y")),), ())) is before


def test_plan_read_names_adds_the_previous_names_to_the_tables() -> None:
    result = Plan(
        (RenameTable(name("s.b"), name("s.z_old")), RenameTable(name("s.c"), name("s.a_old"))),
        (name("s.b"), name("s.c")),
    )

    assert result.read_names == (name("s.a_old"), name("s.b"), name("s.c"), name("s.z_old"))


def test_names_to_read_are_tables_previous_names_views_and_tombstones() -> None:
    state_ = desired(
        new_orders(),
        table("s.plain", col("id")),
        views=(view("s.v", "SELECT 1"),),
        dropped={name("s.gone"): SPEC},
    )

    assert state_.names_to_read() == [name("s.gone"), name("s.new"), name("s.old"), name("s.plain"), name("s.v")]


# --- tombstones -----------------------------------------------------------------------------------------


def test_a_tombstone_of_an_existing_table_removes_it_with_what_it_holds() -> None:
    gone = dataclasses.replace(
        live(table("s.gone", col("id")), num_files=3, size_bytes=2048), location="s3://bucket/gone"
    )

    result = plan(current(gone), desired(dropped={name("s.gone"): SPEC}))

    assert result.actions == (RemoveTable(name("s.gone"), SPEC, False, 3, 2048, "s3://bucket/gone"),)
    assert result.tables == (name("s.gone"),)
    assert result.summary == Summary(create=0, change=0, unchanged=0, blocked=0, drop=1)


def test_a_tombstone_of_an_absent_table_is_inert() -> None:
    result = plan(current(), desired(dropped={name("s.gone"): SPEC}))

    assert result == Plan((), (), ())


def test_a_view_tombstone_drops_the_view() -> None:
    existing = view("s.v", "SELECT 1")

    result = plan(
        current(views=(existing,)), desired(dropped={name("s.v"): SPEC}, dropped_views=frozenset({name("s.v")}))
    )

    assert result.actions == (RemoveTable(name("s.v"), SPEC, view=True),)
    assert ddl.to_sql(result.actions[0]) == ("DROP VIEW `s`.`v`",)


# --- location -------------------------------------------------------------------------------------------


def located(text: str | None, *, spec: bool = False) -> Table:
    base = table("s.t", col("id", "bigint"), origin=SPEC if spec else None)
    return dataclasses.replace(base if spec else live(base), location=text)


@pytest.mark.parametrize(
    ("have", "want"),
    [(None, None), ("file:/x", "file:/x"), ("s3://b/t", None)],
)
def test_a_location_unchanged_or_not_declared_plans_nothing(have: str | None, want: str | None) -> None:
    assert plan(current(located(have)), desired(located(want, spec=True))).actions == ()


def test_a_different_location_is_unsupported() -> None:
    result = plan(current(located("file:/x")), desired(located("file:/y", spec=True)))

    assert result.actions == (
        Unsupported(
            name("s.t"),
            "location",
            "the table is at file:/x; the spec places it at file:/y",
            "a location is only set when the table is created: keep the spec's location as it is, or move the "
            "table by hand (CREATE TABLE ... LOCATION ... AS SELECT, then swap the names)",
            SPEC,
        ),
    )


def test_a_location_for_a_managed_table_is_unsupported() -> None:
    result = plan(current(located(None)), desired(located("s3://b/t", spec=True)))

    (block,) = result.blocked
    assert (block.subject, block.reason) == (
        "location",
        "the table is managed (in the catalog's warehouse); the spec places it at s3://b/t",
    )


def test_a_new_external_table_is_created_at_its_location() -> None:
    result = plan(current(), desired(located("s3://b/t", spec=True)))

    (create,) = result.actions
    assert isinstance(create, CreateTable)
    assert ddl.to_sql(create) == ("CREATE TABLE `s`.`t` (\n  `id` bigint\n) USING DELTA\nLOCATION 's3://b/t'",)


# --- unmanaged tables and strict mode -------------------------------------------------------------------


def catalog_with_strangers() -> CatalogState:
    """s.t is declared; s.old is renamed from, s.tomb is a tombstone; s.other, s.odd and s.v no spec names."""
    managed = live(table("s.t", col("id", "bigint")))
    other = live(table("s.other", col("x")), num_files=2, size_bytes=10)
    tomb = live(table("s.tomb", col("x")), num_files=0, size_bytes=0)
    listed = frozenset(name(n) for n in ("s.t", "s.other", "s.odd", "s.v", "s.old", "s.tomb", "s.spec_v"))
    return current(managed, other, tomb, listed=listed, listed_views=frozenset({name("s.v"), name("s.spec_v")}))


def strangers_specs(*, strict: bool = False) -> CatalogState:
    renamed = dataclasses.replace(table("s.t", col("id", "bigint")), renamed_from=name("s.old"))
    return desired(
        renamed,
        views=(view("s.spec_v", "SELECT 1"),),
        dropped={name("s.tomb"): SPEC},
        strict=strict,
    )


def test_unmanaged_names_are_listed_without_specs_previous_names_or_tombstones() -> None:
    before = catalog_with_strangers()
    before = dataclasses.replace(before, views={name("s.spec_v"): view("s.spec_v", "SELECT 1")})

    result = plan(before, strangers_specs())

    assert result.unmanaged == (name("s.odd"), name("s.other"), name("s.v"))
    # s.old is listed but is no Delta table the catalog read: s.t stays as it is; the tombstone drops s.tomb.
    assert result.actions == (RemoveTable(name("s.tomb"), SPEC, num_files=0, size_bytes=0),)


def test_nothing_is_unmanaged_when_the_catalog_was_not_listed() -> None:
    assert plan(current(), desired(table("s.t", col("id")))).unmanaged == ()


def test_strict_drops_every_unmanaged_table_and_view() -> None:
    before = dataclasses.replace(catalog_with_strangers(), views={name("s.spec_v"): view("s.spec_v", "SELECT 1")})

    result = plan(before, strangers_specs(strict=True))

    removed = [a for a in result.actions if isinstance(a, RemoveTable)]
    assert removed == [
        RemoveTable(name("s.odd"), strict=True),  # listed but not read: neither a Delta table nor a view we know
        RemoveTable(name("s.other"), num_files=2, size_bytes=10, strict=True),
        RemoveTable(name("s.tomb"), SPEC, num_files=0, size_bytes=0),
        RemoveTable(name("s.v"), view=True, strict=True),
    ]
    assert [ddl.to_sql(a) for a in removed] == [
        ("DROP TABLE `s`.`odd`",),
        ("DROP TABLE `s`.`other`",),
        ("DROP TABLE `s`.`tomb`",),
        ("DROP VIEW `s`.`v`",),
    ]
    assert result.unmanaged == ()
    assert set(result.tables) >= {name("s.odd"), name("s.other"), name("s.tomb"), name("s.v")}
    assert result.summary.drop == 4


def test_summary_text_counts_drops_only_when_there_are_some() -> None:
    assert str(Summary(create=1, change=2, unchanged=3, blocked=0, drop=4)) == (
        "1 to create, 2 to change, 4 to drop, 3 unchanged"
    )
    assert str(Summary(create=0, change=0, unchanged=1, blocked=2, drop=1)) == (
        "0 to create, 0 to change, 1 to drop, 1 unchanged, 2 blocked"
    )
    assert str(Summary(create=0, change=1, unchanged=0, blocked=0)) == "0 to create, 1 to change, 0 unchanged"


def test_a_blocked_drop_counts_as_blocked_only() -> None:
    result = Plan(
        (RemoveTable(name("s.a")), RemoveTable(name("s.b")), Unsupported(name("s.b"), "", "r", "x")),
        (name("s.a"), name("s.b")),
    )

    assert result.summary == Summary(create=0, change=0, unchanged=0, blocked=1, drop=1)


def test_plan_json_and_text_name_the_unmanaged_tables_and_the_drops() -> None:
    result = Plan((RemoveTable(name("s.a"), SPEC, num_files=3, size_bytes=2048),), (name("s.a"),), (name("s.z"),))

    data = plan_json(result)

    assert data["summary"] == {"create": 0, "change": 0, "unchanged": 0, "blocked": 0, "drop": 1}
    assert data["unmanaged"] == ["s.z"]
    assert unmanaged_text(result.unmanaged) == "not in any spec (1): s.z  (strict: true would drop them)"
    assert action_lines(result.actions[0]) == [
        "- drop the table (tombstone specs/s/t.yaml:1) with its 3 data file(s), 2.0 KiB"
    ]
    assert action_lines(RemoveTable(name("s.b"), location="s3://x/b")) == [
        "- drop the table (no spec names it, strict: true); its files at s3://x/b stay"
    ]
    assert action_lines(RemoveTable(name("s.c"), view=True)) == ["- drop the view (no spec names it, strict: true)"]


# --- views: planning ------------------------------------------------------------------------------------

T = table("s.t", col("id", "bigint"), col("a"))
V1 = view("s.v1", "SELECT id FROM s.t", comment="c", columns=(ViewColumn("id", "the id"),), origin=VIEW_SPEC)


def test_a_new_view_is_created() -> None:
    result = plan(current(live(T)), desired(T, views=(V1,)))

    assert result.actions == (CreateView(V1, 0),)
    assert result.tables == (name("s.t"), name("s.v1"))
    assert result.summary == Summary(create=1, change=0, unchanged=1, blocked=0)
    assert ddl.to_sql(result.actions[0]) == (
        "CREATE VIEW `s`.`v1` (`id` COMMENT 'the id')\nCOMMENT 'c'\nAS SELECT id FROM s.t",
    )


@pytest.mark.parametrize(
    "stored",
    [
        "SELECT id FROM s.t",
        "select  ID\n   from S.T",
        "SELECT id -- the key\nFROM s.t /* all rows */",
        "SELECT\tid\nFROM\ts.t\n",
    ],
)
def test_a_view_whose_query_differs_only_in_whitespace_case_or_comments_is_unchanged(stored: str) -> None:
    have = dataclasses.replace(V1, sql=stored, origin=None)

    result = plan(current(live(T), views=(have,)), desired(T, views=(V1,)))

    assert result.actions == ()
    assert result.summary == Summary(create=0, change=0, unchanged=2, blocked=0)


@pytest.mark.parametrize(
    ("want", "reasons"),
    [
        (dataclasses.replace(V1, sql="SELECT id + 1 AS id FROM s.t"), ("query changed",)),
        (dataclasses.replace(V1, sql="SELECT id FROM s.t WHERE a = 'X'"), ("query changed",)),
        (dataclasses.replace(V1, comment="d"), ("comment: 'c' -> 'd'",)),
        (dataclasses.replace(V1, comment=None), ("comment: 'c' -> (none)",)),
        (dataclasses.replace(V1, columns=(ViewColumn("id", "new"),)), ("column id comment: 'the id' -> 'new'",)),
        (dataclasses.replace(V1, columns=(ViewColumn("id"),)), ("column id comment: 'the id' -> (none)",)),
        (dataclasses.replace(V1, columns=(ViewColumn("ident", "the id"),)), ("columns: (id) -> (ident)",)),
        (
            dataclasses.replace(V1, sql="SELECT 2 AS id FROM s.t", comment="d"),
            ("query changed", "comment: 'c' -> 'd'"),
        ),
    ],
)
def test_a_view_is_replaced_when_its_query_comment_or_column_comments_differ(
    want: View, reasons: tuple[str, ...]
) -> None:
    have = dataclasses.replace(V1, origin=None)

    result = plan(current(live(T), views=(have,)), desired(T, views=(want,)))

    assert result.actions == (CreateView(want, 0, have, reasons),)
    assert result.summary == Summary(create=0, change=1, unchanged=1, blocked=0)
    assert ddl.to_sql(result.actions[0])[0].startswith("CREATE OR REPLACE VIEW `s`.`v1`")


def test_a_view_spec_without_columns_ignores_the_column_comments_it_has() -> None:
    have = dataclasses.replace(V1, columns=(ViewColumn("id", "a comment set by hand"),), origin=None)
    want = dataclasses.replace(V1, columns=None)

    assert plan(current(live(T), views=(have,)), desired(T, views=(want,))).actions == ()


def test_views_come_after_every_table_and_views_over_views_after_the_view_they_read() -> None:
    fk = ForeignKey("fk_t", ("id",), name("s.t"), ("id",))
    zz = dataclasses.replace(table("s.zz", col("id", "bigint")), foreign_keys=(fk,))
    outer = view("s.a_outer", "SELECT id FROM s.m_middle")
    middle = view("s.m_middle", "SELECT id FROM s.z_inner")
    inner = view("s.z_inner", "SELECT id FROM s.zz JOIN s.t USING (id)")

    result = plan(CatalogState({}), desired(T, zz, views=(outer, middle, inner)))

    assert kinds(result.actions) == [
        ("CreateSchema", "s"),
        ("CreateTable", "s.t"),
        ("CreateTable", "s.zz"),
        ("AddForeignKey", "s.zz"),
        ("CreateView", "s.z_inner"),
        ("CreateView", "s.m_middle"),
        ("CreateView", "s.a_outer"),
    ]
    assert [a.depth for a in result.actions if isinstance(a, CreateView)] == [0, 1, 2]
    assert isinstance(result.actions[3], AddForeignKey)


def test_a_view_spec_where_a_table_exists_is_unsupported() -> None:
    result = plan(current(live(table("s.v1", col("id")))), desired(views=(V1,)))

    assert result.actions == (
        Unsupported(
            name("s.v1"),
            "",
            "`s.v1` is a table, and the spec declares a view",
            "drop the table first (a tombstone spec: table: ..., drop: true, in an earlier apply), "
            "or give the view another name",
            VIEW_SPEC,
        ),
    )


def test_a_table_spec_where_a_view_exists_is_unsupported() -> None:
    spec = table("s.v1", col("id"), origin=SPEC)

    result = plan(current(views=(dataclasses.replace(V1, origin=None),)), desired(spec))

    assert result.actions == (
        Unsupported(
            name("s.v1"),
            "",
            "`s.v1` is a view, and the spec declares a table",
            "drop the view first (a tombstone spec: view: ..., drop: true, in an earlier apply), "
            "or give the table another name",
            SPEC,
        ),
    )


# --- ddl ------------------------------------------------------------------------------------------------


def test_ddl_of_the_new_actions() -> None:
    assert ddl.to_sql(RenameTable(name("s.new"), name("s.old"))) == ("ALTER TABLE `s`.`old` RENAME TO `s`.`new`",)
    assert ddl.to_sql(RenameTable(name("main.s.new"), name("main.s.old"))) == (
        "ALTER TABLE `main`.`s`.`old` RENAME TO `main`.`s`.`new`",
    )
    assert ddl.to_sql(RemoveTable(name("s.gone"), num_files=3)) == ("DROP TABLE `s`.`gone`",)
    assert ddl.to_sql(RemoveTable(name("s.gone"), view=True)) == ("DROP VIEW `s`.`gone`",)
    assert ddl.to_sql(BreaksView(name("s.t"), name("s.v"), "error")) == ()


def test_ddl_of_a_view_quotes_columns_and_comments_and_keeps_the_query_as_written() -> None:
    full = view(
        "s.v",
        "SELECT id, x FROM s.t\nWHERE y = 'it''s'",
        comment="the v's",
        columns=(ViewColumn("id", "an 'id"), ViewColumn("Odd name")),
    )

    assert ddl.to_sql(CreateView(full)) == (
        "CREATE VIEW `s`.`v` (`id` COMMENT 'an \\'id', `Odd name`)\nCOMMENT 'the v\\'s'\n"
        "AS SELECT id, x FROM s.t\nWHERE y = 'it''s'",
    )
    bare = view("s.v", "SELECT 1 AS id")
    assert ddl.to_sql(CreateView(bare, 0, None, ("re-created",))) == (
        "CREATE OR REPLACE VIEW `s`.`v`\nAS SELECT 1 AS id",
    )
    assert ddl.create_view(bare, replace=True) == "CREATE OR REPLACE VIEW `s`.`v`\nAS SELECT 1 AS id"
    assert ddl.create_view(bare) == "CREATE VIEW `s`.`v`\nAS SELECT 1 AS id"


# --- statements.waves -----------------------------------------------------------------------------------


def test_waves_put_a_rename_with_the_foreign_key_drops_and_views_in_one_last_lane() -> None:
    fk = ForeignKey("fk_c", ("cid",), name("s.c"), ("id",))
    customers = table("s.c", col("id", "bigint"))
    old = dataclasses.replace(live(table("s.old", col("id", "bigint"), col("cid", "bigint"))), foreign_keys=(fk,))
    new = dataclasses.replace(
        table("s.new", col("id", "bigint"), col("cid", "bigint"), col("x")), renamed_from=name("s.old")
    )
    inner = view("s.v1", "SELECT id FROM s.new")
    outer = view("s.a0", "SELECT id FROM s.v1")

    result = plan(current(live(customers), old), desired(customers, new, views=(inner, outer)))
    work = statements.statements_of(result)

    assert [(s.table, s.kind, s.sql) for s in work] == [
        ("s.new", "RenameTable", "ALTER TABLE `s`.`old` RENAME TO `s`.`new`"),
        (
            "s.new",
            "DropForeignKey",
            "ALTER TABLE `s`.`new` UNSET TBLPROPERTIES IF EXISTS ('delta_sync.foreign_key.fk_c')",
        ),
        ("s.new", "AddColumns", "ALTER TABLE `s`.`new` ADD COLUMNS (`x` string)"),
        ("s.v1", "CreateView", "CREATE VIEW `s`.`v1`\nAS SELECT id FROM s.new"),
        ("s.a0", "CreateView", "CREATE VIEW `s`.`a0`\nAS SELECT id FROM s.v1"),
    ]
    assert statements.waves(work) == [[[0, 1]], [[2]], [[3, 4]]]


def test_waves_run_a_leading_check_before_a_rename_and_views_last() -> None:
    work = [
        statements.Statement("s", statements.Kind.CREATE_SCHEMA, "x"),
        statements.Statement("s.v", statements.Kind.CREATE_VIEW, "x"),
        statements.Statement("s.new", statements.Kind.RENAME_TABLE, "x"),
        statements.Statement("s.other", statements.Kind.ADD_CHECK, "x", "c"),
        statements.Statement("s.other", statements.Kind.ADD_COLUMNS, "x"),
        statements.Statement("s.w", statements.Kind.CREATE_VIEW, "x"),
        statements.Statement("s.new", statements.Kind.ADD_COLUMNS, "x"),
        statements.Statement("s.k", statements.Kind.DROP_FOREIGN_KEY, "x"),
    ]

    assert statements.waves(work) == [[[0]], [[3]], [[2], [7]], [[4], [6]], [[1, 5]]]


# --- views: the engine's analysis -----------------------------------------------------------------------

T_WANT = table("s.t", col("id", "bigint"))  # `a` is dropped
T_HAVE = live(T)


def dropping_a() -> Plan:
    return Plan(
        (
            EnableFeature(name("s.t"), "delta.columnMapping.mode", "name", "dropping `a` needs column mapping"),
            DropColumns(name("s.t"), (col("a"),)),
        ),
        (name("s.t"),),
    )


def job_of(subjects: tuple[tuple[TableName, bool], ...], names: Mapping[str, str] | None = None) -> views.Work:
    queries = tuple(("", "q") for _ in subjects)
    return views.Work((), queries, subjects, names or {"__delta_sync_table_0": "s.t"})


def test_changed_tables_are_those_a_view_may_not_survive_keyed_by_the_name_a_view_reads() -> None:
    result = Plan(
        (
            RenameTable(name("s.new"), name("s.old")),
            RemoveTable(name("s.gone")),
            RemoveTable(name("s.gone_view"), view=True),
            AlterColumnType(name("s.w"), "n", "int", "bigint"),
            AddColumns(name("s.added"), (col("x"),)),
            *dropping_a().actions,
        ),
        (),
    )

    # A view dropped counts too: a view over it does not survive either. Columns added break nothing.
    assert views.changed_tables(result) == {
        name("s.old"): name("s.new"),
        name("s.gone"): name("s.gone"),
        name("s.gone_view"): name("s.gone_view"),
        name("s.w"): name("s.w"),
        name("s.t"): name("s.t"),
    }


def test_needs_engine_only_when_a_view_is_concerned() -> None:
    no_views = CatalogState({})
    assert not views.needs_engine(dropping_a(), current(T_HAVE), desired(T_WANT))
    # views exist, but no table changes in a way they may not survive
    adding = Plan((AddColumns(name("s.t"), (col("x"),)),), (name("s.t"),))
    assert not views.needs_engine(adding, current(T_HAVE, listed_views=frozenset({name("s.v")})), desired(T_WANT))
    # a view the specs declare, even with nothing to change: an earlier apply may have broken it
    assert views.needs_engine(Plan((), ()), no_views, desired(views=(V1,)))
    # a breaking change and a view the specs declare, or one the catalog lists
    assert views.needs_engine(dropping_a(), current(T_HAVE), desired(T_WANT, views=(V1,)))
    assert views.needs_engine(dropping_a(), current(T_HAVE, listed_views=frozenset({name("s.v")})), desired(T_WANT))
    # a view to create
    assert views.needs_engine(Plan((CreateView(V1),), ()), no_views, no_views)


def test_check_asks_no_engine_when_no_view_is_concerned() -> None:
    untouchable = cast(Catalog, object())  # any call would raise AttributeError
    result = dropping_a()

    assert views.check(untouchable, result, current(T_HAVE), desired(T_WANT)) is result


def test_work_puts_stand_ins_in_the_queries_and_analyses_affected_existing_views() -> None:
    spec_view = view("s.v", "SELECT id, a FROM s.t", origin=VIEW_SPEC)
    stranger = view("s.other", "SELECT a FROM s.t")
    unrelated = view("s.elsewhere", "SELECT 1 FROM s.u")
    existing = {spec_view.name: dataclasses.replace(spec_view, origin=None), stranger.name: stranger}
    existing[unrelated.name] = unrelated

    job = views.work(dropping_a(), current(T_HAVE), desired(T_WANT, views=(spec_view,)), existing)

    # The view no spec names is registered as the plan leaves it too; the spec's view, unchanged, is its query.
    assert job == views.Work(
        stand_ins=(("__delta_sync_table_0", (("id", "bigint"),)),),
        queries=(
            ("__delta_sync_view_0", "SELECT a FROM __delta_sync_table_0 AS `t`"),
            ("__delta_sync_view_1", "SELECT id, a FROM __delta_sync_table_0 AS `t`"),
        ),
        subjects=((name("s.other"), False), (name("s.v"), True)),
        names={"__delta_sync_table_0": "s.t", "__delta_sync_view_0": "s.other", "__delta_sync_view_1": "s.v"},
    )


def test_a_spec_query_that_does_not_resolve_is_an_error_at_the_view_line() -> None:
    spec_view = view("s.v", "SELECT id, a, b FROM s.t", origin=Origin("specs/s/v.yaml", 3))
    job = job_of(((name("s.v"), True),))

    with pytest.raises(SpecError) as info:
        views.apply_results(
            dropping_a(),
            desired(T_WANT, views=(spec_view,)),
            {},
            job,
            ["[UNRESOLVED_COLUMN] `b` cannot be resolved in `__delta_sync_table_0`"],
        )

    assert info.value.problems == (
        SpecProblem(
            "specs/s/v.yaml",
            3,
            "view `s.v`: its query does not resolve against the tables as the plan leaves them: "
            "[UNRESOLVED_COLUMN] `b` cannot be resolved in `s.t`",
            "fix sql: (name the tables it reads as schema.table)",
        ),
    )


def test_an_unchanged_spec_query_that_a_table_change_breaks_is_a_breaking_view_not_an_error() -> None:
    spec_view = view("s.v", "SELECT id, a FROM s.t", origin=Origin("specs/s/v.yaml", 3))
    existing = {name("s.v"): view("s.v", "select id, a\nfrom s.t")}
    job = job_of(((name("s.v"), True),))
    error = "[UNRESOLVED_COLUMN] `a` cannot be resolved in `__delta_sync_table_0`"

    result = views.apply_results(dropping_a(), desired(T_WANT, views=(spec_view,)), existing, job, [error])

    assert result.actions == (
        *dropping_a().actions,
        BreaksView(
            name("s.t"),
            name("s.v"),
            "[UNRESOLVED_COLUMN] `a` cannot be resolved in `s.t`",
            Origin("specs/s/v.yaml", 3),
            replaced=False,
        ),
    )
    assert result.tables == dropping_a().tables


def test_an_existing_view_no_spec_names_that_fails_breaks_with_no_origin() -> None:
    existing = {name("s.other"): view("s.other", "SELECT a FROM s.t")}
    job = job_of(((name("s.other"), False),))

    result = views.apply_results(dropping_a(), desired(T_WANT), existing, job, ["`__delta_sync_table_0` lacks a"])

    assert result.actions[-1] == BreaksView(name("s.t"), name("s.other"), "`s.t` lacks a", None, False)
    assert result.unmanaged == dropping_a().unmanaged


def test_a_renamed_table_breaks_a_view_on_its_new_name() -> None:
    renaming = Plan((RenameTable(name("s.new"), name("s.old")),), (name("s.new"),))
    existing = {name("s.other"): view("s.other", "SELECT * FROM s.old")}
    job = job_of(((name("s.other"), False),), {"__delta_sync_gone_0": "s.old"})

    result = views.apply_results(renaming, desired(), existing, job, ["`__delta_sync_gone_0` not found"])

    assert result.actions == (
        RenameTable(name("s.new"), name("s.old")),
        BreaksView(name("s.new"), name("s.other"), "`s.old` not found"),
    )


def test_a_changed_query_that_resolves_replaces_the_view_it_breaks() -> None:
    spec_view = view("s.v", "SELECT id FROM s.t", origin=VIEW_SPEC)
    was = view("s.v", "SELECT id, a FROM s.t")
    planned = Plan((*dropping_a().actions, CreateView(spec_view, 0, was, ("query changed",))), (name("s.t"),))
    job = job_of(((name("s.v"), True), (name("s.v"), False)))

    result = views.apply_results(planned, desired(T_WANT, views=(spec_view,)), {name("s.v"): was}, job, [None, "e"])

    assert [a for a in result.actions if isinstance(a, BreaksView | CreateView)] == [
        BreaksView(name("s.t"), name("s.v"), "e", VIEW_SPEC, replaced=True),
        CreateView(spec_view, 0, was, ("query changed",)),
    ]


def test_a_spec_view_reading_a_changed_table_that_resolves_is_re_created_after_the_change() -> None:
    spec_view = view("s.v", "SELECT id FROM s.t", origin=VIEW_SPEC)
    was = dataclasses.replace(spec_view, origin=None)
    job = job_of(((name("s.v"), True), (name("s.v"), False)))

    result = views.apply_results(
        dropping_a(), desired(T_WANT, views=(spec_view,)), {name("s.v"): was}, job, [None, None]
    )

    assert result.actions == (
        *dropping_a().actions,
        CreateView(spec_view, 0, was, ("re-created after the change of s.t",)),
    )
    assert ddl.to_sql(result.actions[-1]) == ("CREATE OR REPLACE VIEW `s`.`v`\nAS SELECT id FROM s.t",)


def test_a_view_that_fails_because_the_view_it_reads_fails_is_not_reported_twice() -> None:
    inner = view("s.inner", "SELECT id, a, b FROM s.t", origin=Origin("specs/s/inner.yaml", 1))
    outer = view("s.outer", "SELECT * FROM s.inner", origin=Origin("specs/s/outer.yaml", 1))
    job = job_of(((name("s.inner"), True), (name("s.outer"), True)))

    with pytest.raises(SpecError) as info:
        views.apply_results(dropping_a(), desired(T_WANT, views=(inner, outer)), {}, job, ["bad", "bad too"])

    assert [(p.file, p.message) for p in info.value.problems] == [
        (
            "specs/s/inner.yaml",
            "view `s.inner`: its query does not resolve against the tables as the plan leaves them: bad",
        )
    ]


# --- hazards --------------------------------------------------------------------------------------------


def test_hazards_of_renames_drops_and_broken_views() -> None:
    where = Origin("specs/s/v.yaml", 3)
    result = Plan(
        (
            RenameTable(name("s.new"), name("s.old"), SPEC),
            RemoveTable(name("s.a"), SPEC, num_files=3, size_bytes=2048),
            RemoveTable(name("s.b"), location="s3://x/b"),
            RemoveTable(name("s.c"), view=True),
            RemoveTable(name("s.d")),
            BreaksView(name("s.t"), name("s.v"), "E1", where, replaced=True),
            BreaksView(name("s.t"), name("s.w"), "E2"),
        ),
        (name("s.a"), name("s.b"), name("s.c"), name("s.d"), name("s.new"), name("s.t")),
    )

    assessment = hazard_policy.assess(result, current(), [], allowed=())

    assert [(f.index, f.hazard, f.reason, f.origin) for f in assessment.findings] == [
        (0, Hazard.BREAKING, "readers, jobs and views that use `s.old` break after the rename", SPEC),
        (1, Hazard.DESTRUCTIVE, "dropping `s.a` deletes its data (3 file(s), 2.0 KiB) and history", SPEC),
        (1, Hazard.BREAKING, "readers of `s.a` break", SPEC),
        (2, Hazard.DESTRUCTIVE, "dropping `s.b` removes it from the catalog (its files at s3://x/b stay)", None),
        (2, Hazard.BREAKING, "readers of `s.b` break", None),
        (3, Hazard.DESTRUCTIVE, "dropping the view `s.c` removes its definition", None),
        (3, Hazard.BREAKING, "readers of `s.c` break", None),
        (4, Hazard.DESTRUCTIVE, "dropping `s.d` deletes what it holds", None),
        (4, Hazard.BREAKING, "readers of `s.d` break", None),
        (
            5,
            Hazard.BREAKING,
            "view `s.v` (specs/s/v.yaml:3) stops working: E1; the plan re-creates it after this change",
            where,
        ),
        (6, Hazard.BREAKING, "view `s.w` (not in the specs) stops working: E2", None),
    ]
    assert len(assessment.blocks) == 11
    allowed = hazard_policy.assess(result, current(), [], allowed={Hazard.BREAKING, Hazard.DESTRUCTIVE})
    assert allowed.blocks == ()


# --- spec files -----------------------------------------------------------------------------------------

TABLE_HEAD = "table: s.t\ncolumns:\n  - name: id\n    type: bigint\n"


def write(directory: Path, file: str, text: str) -> Path:
    path = directory / file
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def spec_problems(*paths: Path) -> list[tuple[str, int, str, str]]:
    with pytest.raises(SpecError) as info:
        load_spec_files(paths)
    return [(Path(p.file).name, p.line, p.message, p.hint) for p in info.value.problems]


def test_a_location_is_kept_as_written_and_a_relative_one_is_an_error_at_its_line(tmp_path: Path) -> None:
    # As written: the DDL gets the spec's text (a path without a scheme stays on the default filesystem).
    good = load_spec_files([write(tmp_path, "t.yaml", TABLE_HEAD + "location: /data/t/\n")])
    assert good.tables[name("s.t")].location == "/data/t/"

    bad = write(tmp_path, "bad.yaml", "table: s.u\ncolumns:\n  - name: id\n    type: bigint\nlocation: data/u\n")
    assert spec_problems(bad) == [
        (
            "bad.yaml",
            5,
            "location 'data/u' must be an absolute path or a URI",
            "e.g. location: s3://bucket/tables/orders, or location: /data/tables/orders",
        )
    ]


def test_renamed_from_is_read_as_a_table_name(tmp_path: Path) -> None:
    state_ = load_spec_files([write(tmp_path, "t.yaml", TABLE_HEAD + "renamed_from: S.Old\n")])

    assert state_.tables[name("s.t")].renamed_from == TableName(None, "s", "old")


@pytest.mark.parametrize(
    ("renamed_from", "line", "message", "hint"),
    [
        (
            "nope",
            5,
            "table name 'nope' must be schema.table or catalog.schema.table",
            "e.g. renamed_from: sales.orders_v1",
        ),
        ("s.T", 1, "table `s.t` is renamed from itself", "remove renamed_from:"),
        (
            "other.t",
            1,
            "renamed_from `other.t` is in another schema",
            "rename within `other` here, and move the table to another schema by hand",
        ),
    ],
)
def test_renamed_from_problems(tmp_path: Path, renamed_from: str, line: int, message: str, hint: str) -> None:
    path = write(tmp_path, "t.yaml", TABLE_HEAD + f"renamed_from: {renamed_from}\n")

    assert spec_problems(path) == [("t.yaml", line, message, hint)]


def test_renamed_from_a_table_declared_elsewhere_or_a_tombstone(tmp_path: Path) -> None:
    renamer = write(tmp_path, "a.yaml", TABLE_HEAD + "renamed_from: s.u\n")
    declared = write(tmp_path, "b.yaml", "table: s.u\ncolumns:\n  - name: id\n    type: bigint\n")
    tombstone = write(tmp_path, "c.yaml", "table: s.u\ndrop: true\n")
    hint = "a table renamed from it cannot also be declared: remove renamed_from: or that spec"

    assert spec_problems(renamer, declared) == [("a.yaml", 1, f"renamed_from `s.u` is declared at {declared}:1", hint)]
    assert spec_problems(renamer, tombstone) == [
        ("a.yaml", 1, f"renamed_from `s.u` is declared at {tombstone}:1", hint)
    ]


def test_two_tables_renamed_from_one(tmp_path: Path) -> None:
    first = write(tmp_path, "a.yaml", TABLE_HEAD + "renamed_from: s.u\n")
    second = write(tmp_path, "b.yaml", "table: s.w\nrenamed_from: s.u\ncolumns:\n  - name: id\n    type: bigint\n")

    assert spec_problems(first, second) == [
        (
            "b.yaml",
            1,
            "`s.u` is also renamed to `s.t`",
            "only one table can be renamed from it; keep renamed_from: in one spec",
        )
    ]


def test_tombstones_of_tables_and_views(tmp_path: Path) -> None:
    table_tomb = write(tmp_path, "a.yaml", "table: s.gone\ndrop: true\n")
    view_tomb = write(tmp_path, "b.yaml", "view: S.Old_View\ndrop: true\n")

    state_ = load_spec_files([table_tomb, view_tomb])

    assert state_.dropped == {
        name("s.gone"): Origin(str(table_tomb), 1),
        name("s.old_view"): Origin(str(view_tomb), 1),
    }
    assert state_.tables == {}
    assert state_.views == {}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "table: s.gone\ndrop: true\ncomment: x\n",
            [
                (
                    3,
                    "unknown key `comment` in a tombstone",
                    "a tombstone (drop: true) holds only table: and drop: true; remove the rest",
                )
            ],
        ),
        (
            "view: s.gone\nsql: SELECT 1\ndrop: true\n",
            [
                (
                    2,
                    "unknown key `sql` in a tombstone",
                    "a tombstone (drop: true) holds only view: and drop: true; remove the rest",
                )
            ],
        ),
        (
            "table: s.gone\ndrop: false\n",
            [
                (
                    2,
                    "`drop` must be true, got boolean",
                    "write drop: true to drop the table, or remove drop: to declare it",
                )
            ],
        ),
        (
            "view: s.gone\ndrop: 1\n",
            [
                (
                    2,
                    "`drop` must be true, got integer",
                    "write drop: true to drop the view, or remove drop: to declare it",
                )
            ],
        ),
        (
            "table: gone\ndrop: true\n",
            [
                (
                    1,
                    "table name 'gone' must be schema.table or catalog.schema.table",
                    "e.g. table: sales.orders_tmp",
                )
            ],
        ),
    ],
)
def test_tombstone_problems(tmp_path: Path, text: str, expected: list[tuple[int, str, str]]) -> None:
    path = write(tmp_path, "t.yaml", text)

    assert spec_problems(path) == [("t.yaml", *e) for e in expected]


def test_a_view_spec_is_read_with_its_query_comment_and_columns(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "v.yaml",
        """\
        # the open orders
        view: S.Open_Orders
        comment: Orders not shipped
        sql: |
          SELECT id, amount FROM s.orders
          WHERE status = 'open'
        columns:
          - {name: id, comment: The order}
          - {name: amount}
          - {name: empty, comment: ''}
        """,
    )

    state_ = load_spec_files([path])

    assert state_.views == {
        name("s.open_orders"): View(
            name("s.open_orders"),
            "SELECT id, amount FROM s.orders\nWHERE status = 'open'",
            "Orders not shipped",
            (ViewColumn("id", "The order"), ViewColumn("amount"), ViewColumn("empty")),
        )
    }
    assert state_.views[name("s.open_orders")].origin == Origin(str(path), 2)
    assert state_.tables == {}


@pytest.mark.parametrize(
    ("text", "line", "message", "hint"),
    [
        (
            "view: s.v\ncomment: c\n",
            1,
            "missing required key `sql`",
            "add `sql:` - The view's query (one SELECT); name the tables it reads as schema.table.",
        ),
        (
            "view: s.v\nsql: DELETE FROM s.t\n",
            2,
            "sql: a view's sql is one query (SELECT, WITH, VALUES, ...), not `DELETE`",
            "write one query, e.g. sql: SELECT id, amount FROM shop.orders WHERE open",
        ),
        (
            "view: s.v\nsql: SELECT 1; DROP TABLE s.t\n",
            2,
            "sql: ';' is not allowed: a view's sql is one query, not statements",
            "write one query, e.g. sql: SELECT id, amount FROM shop.orders WHERE open",
        ),
        (
            "view: s.v\nsql: SELECT (1\n",
            2,
            "sql: unbalanced parentheses",
            "write one query, e.g. sql: SELECT id, amount FROM shop.orders WHERE open",
        ),
        (
            "view: s.v\nsql: SELECT id FROM s.t\ncolumns:\n  - name: id\n  - name: ID\n",
            5,
            "column `ID` is listed twice",
            "give each column its own name",
        ),
        (
            "view: s.v\nsql: SELECT id FROM s.t\ncolumns: []\n",
            3,
            "`columns` must not be empty",
            "list at least one entry",
        ),
        (
            "view: s.v\nsql: SELECT id FROM s.t\ntype: x\n",
            3,
            "unknown key `type`",
            "allowed keys: view, comment, sql, columns, protect",
        ),
    ],
)
def test_view_spec_problems(tmp_path: Path, text: str, line: int, message: str, hint: str) -> None:
    assert spec_problems(write(tmp_path, "v.yaml", text)) == [("v.yaml", line, message, hint)]


def test_views_that_read_each_other_are_a_cycle(tmp_path: Path) -> None:
    a = write(tmp_path, "a.yaml", "view: s.a\nsql: SELECT * FROM s.b\n")
    b = write(tmp_path, "b.yaml", "view: s.b\nsql: SELECT * FROM s.c\n")
    c = write(tmp_path, "c.yaml", "view: s.c\nsql: SELECT * FROM s.a JOIN s.t USING (id)\n")
    alone = write(tmp_path, "d.yaml", "view: s.d\nsql: SELECT * FROM `S`.D\n")
    hint = "a view cannot read itself, directly or through other views"

    assert spec_problems(a, b, c, alone) == [
        ("a.yaml", 1, "view `s.a` reads itself through the views it reads", hint),
        ("b.yaml", 1, "view `s.b` reads itself through the views it reads", hint),
        ("c.yaml", 1, "view `s.c` reads itself through the views it reads", hint),
        ("d.yaml", 1, "view `s.d` reads itself through the views it reads", hint),
    ]


def test_views_over_views_without_a_cycle_load(tmp_path: Path) -> None:
    a = write(tmp_path, "a.yaml", "view: s.a\nsql: SELECT * FROM s.b JOIN s.c USING (id)\n")
    b = write(tmp_path, "b.yaml", "view: s.b\nsql: SELECT * FROM s.c\n")
    c = write(tmp_path, "c.yaml", "view: s.c\nsql: SELECT 1 AS id\n")

    assert set(load_spec_files([a, b, c]).views) == {name("s.a"), name("s.b"), name("s.c")}


def test_a_table_and_a_view_with_the_same_name(tmp_path: Path) -> None:
    first = write(tmp_path, "a.yaml", TABLE_HEAD)
    second = write(tmp_path, "b.yaml", "view: S.T\nsql: SELECT 1 AS id\n")

    assert spec_problems(first, second) == [
        ("b.yaml", 1, f"view `s.t` is already declared at {first}:1", "keep one spec file per table or view")
    ]


def test_the_environment_catalog_applies_to_view_and_renamed_from_names(tmp_path: Path) -> None:
    write(tmp_path, "specs/v.yaml", "view: s.v\nsql: SELECT id FROM s.t\n")
    write(tmp_path, "specs/t.yaml", TABLE_HEAD.replace("s.t", "s.new") + "renamed_from: s.old\n")
    write(tmp_path, "specs/gone.yaml", "view: s.gone\ndrop: true\n")
    write(tmp_path, "specs/three.yaml", "view: other.s.w\nsql: SELECT 1\n")

    state_ = load_specs(tmp_path / "specs", {}, "main")

    assert set(state_.views) == {TableName("main", "s", "v"), TableName("other", "s", "w")}
    assert state_.tables[TableName("main", "s", "new")].renamed_from == TableName("main", "s", "old")
    assert set(state_.dropped) == {TableName("main", "s", "gone")}
    # the session catalog is one spelling of no catalog at all
    session = load_specs(tmp_path / "specs", {}, "spark_catalog")
    assert session.tables[name("s.new")].renamed_from == TableName(None, "s", "old")
    assert set(session.views) == {name("s.v"), TableName("other", "s", "w")}


def test_vars_fill_a_view_query(tmp_path: Path) -> None:
    write(tmp_path, "specs/v.yaml", "view: s.v\nsql: SELECT id FROM ${src}\n")

    state_ = load_specs(tmp_path / "specs", {"src": "s.t"})

    assert state_.views[name("s.v")].sql == "SELECT id FROM s.t"


# --- JSON schema ----------------------------------------------------------------------------------------


def test_the_json_schema_has_one_form_per_kind_of_spec() -> None:
    schema = spec_json_schema()

    forms = {form["title"]: form for form in schema["oneOf"]}
    assert list(forms) == ["TableSpec", "TombstoneSpec", "ViewSpec", "ViewTombstoneSpec"]
    assert {title: form["required"] for title, form in forms.items()} == {
        "TableSpec": ["table", "columns"],
        "TombstoneSpec": ["table", "drop"],
        "ViewSpec": ["view", "sql"],
        "ViewTombstoneSpec": ["view", "drop"],
    }
    assert all(form["additionalProperties"] is False for form in forms.values())
    assert {"location", "renamed_from"} <= set(forms["TableSpec"]["properties"])
    assert sorted(forms["ViewSpec"]["properties"]) == ["columns", "comment", "protect", "sql", "view"]
    assert forms["TombstoneSpec"]["properties"]["drop"]["const"] is True
    assert forms["ViewTombstoneSpec"]["properties"]["drop"]["const"] is True
    assert "ViewColumnSpec" in schema["$defs"]
    assert all("$defs" not in form for form in forms.values())


@pytest.mark.parametrize(
    ("doc", "valid"),
    [
        ({"table": "s.t", "columns": [{"name": "id", "type": "bigint"}], "location": "s3://b/t"}, True),
        ({"table": "s.t", "drop": True}, True),
        ({"view": "s.v", "sql": "SELECT 1", "columns": [{"name": "a", "comment": "x"}]}, True),
        ({"view": "s.v", "drop": True}, True),
        ({"table": "s.t", "drop": False}, False),
        ({"view": "s.v"}, False),
        ({"view": "s.v", "sql": "SELECT 1", "drop": True}, False),
    ],
)
def test_documents_match_exactly_one_form_of_the_json_schema(doc: dict[str, Any], valid: bool) -> None:
    jsonschema = importlib.import_module("jsonschema")

    assert jsonschema.Draft202012Validator(spec_json_schema()).is_valid(doc) is valid


# --- import, rehearsal ----------------------------------------------------------------------------------


def test_import_writes_the_location_of_an_external_table() -> None:
    external = dataclasses.replace(table("s.t", col("id", "bigint"), comment="c"), location="s3://b/t")

    assert importer.spec_data(external) == {
        "table": "s.t",
        "comment": "c",
        "location": "s3://b/t",
        "columns": [{"name": "id", "type": "bigint"}],
    }
    assert "location" not in importer.spec_data(table("s.t", col("id", "bigint")))


def test_an_imported_view_reads_back_as_the_same_view_and_plans_nothing(tmp_path: Path) -> None:
    live_view = View(
        name("s.v"),
        "SELECT id, 'x' AS y -- ${not_a_var}\nFROM s.t",
        "A view: with a colon",
        (ViewColumn("id", "The id"), ViewColumn("y")),
    )
    text = importer.spec_text(live_view)
    assert text.startswith("# Imported from the live view s.v by delta-sync import.\nview: s.v\n")

    loaded = load_spec_files([write(tmp_path, "v.yaml", text)])

    assert loaded.views == {name("s.v"): live_view}
    assert plan(current(views=(live_view,)), loaded) == Plan((), (name("s.v"),), ())


def test_an_imported_view_without_column_comments_lists_no_columns() -> None:
    found = View(name("s.v"), "SELECT 1 AS id", None, (ViewColumn("id"),))

    assert importer.view_spec_data(found) == {"view": "s.v", "sql": "SELECT 1 AS id"}


def test_rehearsal_skips_views_and_explains_renames_and_drops() -> None:
    result = Plan(
        (
            CreateSchema(S),
            RenameTable(name("s.b"), name("s.a")),
            AddColumns(name("s.c"), (col("x"),)),
            BreaksView(name("s.c"), name("s.old_view"), "e"),
            RemoveTable(name("s.d")),
            RemoveTable(name("s.e"), view=True),
            CreateView(view("s.v", "SELECT 1")),
        ),
        (),
    )

    assert rehearsal.tables_to_rehearse(result) == [name("s.b"), name("s.c"), name("s.d")]
    assert rehearsal.why_not(result.actions_for(name("s.b"))) == (
        "a table rename changes the catalog's entry, which a clone does not share"
    )
    assert rehearsal.why_not(result.actions_for(name("s.d"))) == (
        "a drop changes the catalog's entry, which a clone does not share"
    )
    assert rehearsal.why_not(result.actions_for(name("s.c"))) is None


def test_retarget_never_keeps_a_location_and_leaves_views_out() -> None:
    external = dataclasses.replace(table("s.t", col("id", "bigint")), location="s3://bucket/real")
    clone = name("scratch.t_clone")

    moved = rehearsal.retarget(
        (
            CreateSchema(S),
            CreateTable(external),
            AddColumns(name("s.t"), (col("x"),)),
            BreaksView(name("s.t"), name("s.v"), "e"),
            CreateView(view("s.v", "SELECT 1")),
        ),
        clone,
        "stamp",
    )

    assert moved == (
        CreateTable(
            dataclasses.replace(external, name=clone, location=None, properties=(("delta_sync.rehearsal", "stamp"),))
        ),
        AddColumns(clone, (col("x"),)),
    )


@pytest.mark.parametrize(
    ("spec", "read", "same"),
    [
        ("/data/t", "file:/data/t", True),
        ("/data/t", "hdfs://nn:8020/data/t", True),  # the default filesystem, named by Spark
        ("hdfs:///data/t", "hdfs://nn:8020/data/t", True),
        ("hdfs://other:8020/data/t", "hdfs://nn:8020/data/t", False),
        ("file:///tmp/a//b/", "file:/tmp/a/b", True),
        ("/tmp/a b", "file:/tmp/a%20b", True),
        ("s3://bucket/x/", "s3://bucket/x", True),
        ("s3://bucket/x", "s3://other/x", False),
        # Users write s3://, open-source Spark reports s3a:// (or the reverse where fs.s3.impl is mapped).
        ("s3://bucket/x", "s3a://bucket/x/", True),
        ("s3a://bucket/x", "s3://bucket/x", True),
        ("s3a://bucket/x/", "s3a://bucket/x", True),
        ("s3a://bucket/x", "s3a://bucket/y", False),
        ("s3://bucket/x", "gs://bucket/x", False),
        ("gs://bucket/x/", "gs://bucket/x", True),
        ("abfss://c@a.dfs.core.windows.net/x", "abfss://c@a.dfs.core.windows.net/x/", True),
        ("abfss://c@a.dfs.core.windows.net/x", "abfss://d@a.dfs.core.windows.net/x", False),
        ("/data/t", None, False),
    ],
)
def test_same_location(spec: str, read: str | None, same: bool) -> None:
    from delta_sync.model.state import same_location

    assert same_location(spec, read) is same


def test_create_table_uses_the_location_as_written() -> None:
    table = Table(name("s.t"), (col("id"),), location="/data/t")
    (sql,) = ddl.to_sql(CreateTable(table))
    assert "LOCATION '/data/t'" in sql


def test_a_view_tombstone_never_drops_a_table_nor_a_table_tombstone_a_view(tmp_path: Path) -> None:
    write(tmp_path, "a.yaml", "view: s.orders\ndrop: true\n")
    write(tmp_path, "b.yaml", "table: s.summary\ndrop: true\n")
    desired = load_specs(tmp_path)
    summary = View(name("s.summary"), "SELECT 1 AS a")
    current = CatalogState(
        {name("s.orders"): table("s.orders", col("id"))},
        frozenset({SchemaName(None, "s")}),
        views={summary.name: summary},
    )
    result = plan(current, desired)
    assert [type(a).__name__ for a in result.actions] == ["Unsupported", "Unsupported"]
    reasons = sorted(a.reason for a in result.actions if isinstance(a, Unsupported))
    assert reasons == [
        "the tombstone names a table, but `s.summary` is a view",
        "the tombstone names a view, but `s.orders` is a table",
    ]
    assert all(not ddl.to_sql(a) for a in result.actions)


def test_strict_refuses_a_part_of_the_specs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from delta_sync.cli import main as cli
    from tests.unit.test_cli import FakeCatalog, use

    monkeypatch.chdir(tmp_path)
    (tmp_path / "delta-sync.yaml").write_text("envs:\n  local:\n    strict: true\n")
    write(tmp_path / "specs" / "shop", "orders.yaml", TABLE_HEAD)
    fake = FakeCatalog(CatalogState(tables={}))
    use(monkeypatch, fake)
    result = CliRunner().invoke(cli.app, ["plan", "specs/shop/orders.yaml"])
    assert result.exit_code == 1, result.output
    assert "is strict: true" in result.stderr
    assert "the tables the other specs declare would be dropped" in result.stderr
    assert CliRunner().invoke(cli.app, ["plan", "specs"]).exit_code == 0


def test_an_environment_catalog_qualifies_the_tables_a_view_reads(tmp_path: Path) -> None:
    write(tmp_path, "base.yaml", "view: shop.z_base\nsql: SELECT id FROM shop.orders\n")
    write(tmp_path, "top.yaml", "view: shop.a_top\nsql: SELECT id FROM shop.z_base\n")
    desired = load_specs(tmp_path, {}, "main")
    top = desired.views[name("main.shop.a_top")]
    assert top.sql == "SELECT id FROM `main`.shop.z_base"
    result = plan(CatalogState(tables={}, schemas=frozenset({SchemaName("main", "shop")})), desired)
    assert [str(a.name) for a in result.actions if isinstance(a, CreateView)] == ["main.shop.z_base", "main.shop.a_top"]


def test_a_tombstone_name_that_is_not_text_is_said_so_at_its_line(tmp_path: Path) -> None:
    path = write(tmp_path, "t.yaml", "drop: true\ntable: 3\n")
    assert spec_problems(path) == [
        ("t.yaml", 2, "`table` must be text, got integer", "write `table: schema.name`, the table to drop")
    ]


def test_a_table_spelled_with_another_catalog_is_never_unmanaged() -> None:
    spelled = table("shop.t", col("id"))
    listed = frozenset({TableName("main", "shop", "t"), TableName("main", "shop", "other")})
    state = CatalogState({spelled.name: live(spelled)}, frozenset({SchemaName(None, "shop")}), listed=listed)
    result = plan(state, CatalogState({spelled.name: spelled}, strict=True))
    assert [str(a.name) for a in result.actions if isinstance(a, RemoveTable)] == ["main.shop.other"]

"""Exact Spark SQL for the change actions, for CREATE TABLE with generated/identity/default/clustering,
and for whole plans from the planner."""

from __future__ import annotations

from dataclasses import replace

import pytest

from delta_sync.model.state import Column, Identity, Table
from delta_sync.planning.actions import (
    AddCheck,
    AlterColumnType,
    ClusterBy,
    CreateTable,
    DropColumns,
    DropNotNull,
    EnableFeature,
    Notice,
    RenameColumn,
    SetDefault,
    UnsetProperties,
)
from delta_sync.planning.ddl import plan_statements, to_sql
from delta_sync.planning.diff.conventions import not_null_check
from delta_sync.planning.diff.planner import plan
from tests.unit.builders import col, column, live, name, state, table

T = name("s.t")
Q = name("cat.sch.Tbl")  # three-part, lower-cased by TableName.parse


# --- one action -> statements -------------------------------------------------------------------


def test_enable_feature_sets_the_property() -> None:
    assert to_sql(EnableFeature(T, "delta.columnMapping.mode", "name", "renaming `a` needs it")) == (
        "ALTER TABLE `s`.`t` SET TBLPROPERTIES ('delta.columnMapping.mode' = 'name')",
    )
    assert to_sql(EnableFeature(T, "delta.enableTypeWidening", "true", "r")) == (
        "ALTER TABLE `s`.`t` SET TBLPROPERTIES ('delta.enableTypeWidening' = 'true')",
    )
    assert to_sql(EnableFeature(Q, "delta.feature.allowColumnDefaults", "supported", "r")) == (
        "ALTER TABLE `cat`.`sch`.`tbl` SET TBLPROPERTIES ('delta.feature.allowColumnDefaults' = 'supported')",
    )


@pytest.mark.parametrize(
    ("before", "after", "sql"),
    [
        ("amt", "amount", "ALTER TABLE `s`.`t` RENAME COLUMN `amt` TO `amount`"),
        ("Unit Price", "unit_price", "ALTER TABLE `s`.`t` RENAME COLUMN `Unit Price` TO `unit_price`"),
        ("a`b", "select", "ALTER TABLE `s`.`t` RENAME COLUMN `a``b` TO `select`"),
    ],
)
def test_rename_column(before: str, after: str, sql: str) -> None:
    assert to_sql(RenameColumn(T, before, after)) == (sql,)


def test_drop_columns_is_one_statement() -> None:
    dropped = (col("a", "int"), col("b c"), col("d`e", "bigint", comment="x"))
    assert to_sql(DropColumns(T, dropped)) == ("ALTER TABLE `s`.`t` DROP COLUMNS (`a`, `b c`, `d``e`)",)
    assert to_sql(DropColumns(T, (col("only"),))) == ("ALTER TABLE `s`.`t` DROP COLUMNS (`only`)",)


@pytest.mark.parametrize(
    ("before", "after"),
    [("int", "bigint"), ("decimal(10,2)", "decimal(12,4)"), ("char(5)", "string"), ("float", "double")],
)
def test_alter_column_type(before: str, after: str) -> None:
    assert to_sql(AlterColumnType(T, "Qty", before, after)) == (f"ALTER TABLE `s`.`t` ALTER COLUMN `Qty` TYPE {after}",)


def test_drop_not_null() -> None:
    assert to_sql(DropNotNull(T, "qty")) == ("ALTER TABLE `s`.`t` ALTER COLUMN `qty` DROP NOT NULL",)
    assert to_sql(DropNotNull(T, "a b")) == ("ALTER TABLE `s`.`t` ALTER COLUMN `a b` DROP NOT NULL",)


def test_set_default_sets_changes_and_drops() -> None:
    assert to_sql(SetDefault(T, "status", None, "'new'")) == (
        "ALTER TABLE `s`.`t` ALTER COLUMN `status` SET DEFAULT 'new'",
    )
    assert to_sql(SetDefault(T, "status", "'new'", "'open'")) == (
        "ALTER TABLE `s`.`t` ALTER COLUMN `status` SET DEFAULT 'open'",
    )
    assert to_sql(SetDefault(T, "created", None, "current_timestamp()")) == (
        "ALTER TABLE `s`.`t` ALTER COLUMN `created` SET DEFAULT current_timestamp()",
    )
    assert to_sql(SetDefault(T, "status", "'new'", None)) == ("ALTER TABLE `s`.`t` ALTER COLUMN `status` DROP DEFAULT",)


def test_unset_properties_names_the_keys_only() -> None:
    removed = (("owner", "crm"), ("delta.appendOnly", "true"), ("it's", "x"))
    assert to_sql(UnsetProperties(T, removed)) == (
        "ALTER TABLE `s`.`t` UNSET TBLPROPERTIES ('owner', 'delta.appendOnly', 'it\\'s')",
    )


def test_cluster_by_keys_and_none() -> None:
    assert to_sql(ClusterBy(T, ("a",), ("b", "c d"))) == ("ALTER TABLE `s`.`t` CLUSTER BY (`b`, `c d`)",)
    assert to_sql(ClusterBy(T, (), ("a",))) == ("ALTER TABLE `s`.`t` CLUSTER BY (`a`)",)
    assert to_sql(ClusterBy(T, ("a", "b"), ())) == ("ALTER TABLE `s`.`t` CLUSTER BY NONE",)


def test_cluster_by_sql_does_not_depend_on_when_it_runs() -> None:
    assert to_sql(ClusterBy(T, ("a", "b"), ("a",), early=True)) == to_sql(ClusterBy(T, ("a", "b"), ("a",)))


def test_notice_has_no_statement() -> None:
    assert to_sql(Notice(T, "amount", "spelled `Amount` in the table")) == ()


def test_not_null_check_for_an_odd_name_is_valid_sql() -> None:
    check = not_null_check(Column("a`b c", "int"))
    (sql,) = to_sql(AddCheck(T, check))
    assert sql == f"ALTER TABLE `s`.`t` ADD CONSTRAINT {check.name} CHECK (`a``b c` IS NOT NULL)"
    assert "`" not in check.name


# --- CREATE TABLE -------------------------------------------------------------------------------


def test_create_table_with_identity_generated_default_and_clustering() -> None:
    created = replace(
        table(
            "s.t",
            column("id", "bigint", nullable=False, identity=Identity(5, 2, always=True), comment="key"),
            column("seq", "bigint", identity=Identity(1, 1, always=False)),
            col("ts", "timestamp"),
            column("d", "date", generated="CAST(ts AS DATE)"),
            column("status", default="'new'", comment="state"),
        ),
        clustered_by=("ts", "status"),
    )
    assert to_sql(CreateTable(created)) == (
        "CREATE TABLE `s`.`t` (\n"
        "  `id` bigint NOT NULL GENERATED ALWAYS AS IDENTITY (START WITH 5 INCREMENT BY 2) COMMENT 'key',\n"
        "  `seq` bigint GENERATED BY DEFAULT AS IDENTITY (START WITH 1 INCREMENT BY 1),\n"
        "  `ts` timestamp,\n"
        "  `d` date GENERATED ALWAYS AS (CAST(ts AS DATE)),\n"
        "  `status` string DEFAULT 'new' COMMENT 'state'\n"
        ") USING DELTA\n"
        "CLUSTER BY (`ts`, `status`)\n"
        "TBLPROPERTIES ('delta.feature.allowColumnDefaults' = 'supported')",
    )


def test_create_table_with_a_negative_identity_step() -> None:
    created = table("s.t", column("id", "bigint", identity=Identity(-1, -5, always=False)))
    assert to_sql(CreateTable(created)) == (
        "CREATE TABLE `s`.`t` (\n"
        "  `id` bigint GENERATED BY DEFAULT AS IDENTITY (START WITH -1 INCREMENT BY -5)\n"
        ") USING DELTA",
    )


def test_create_table_with_a_default_keeps_declared_properties_and_adds_the_feature_last() -> None:
    created = table("s.t", column("status", default="'new'"), properties={"owner": "crm", "a.b": "1"})
    (sql,) = to_sql(CreateTable(created))
    assert sql.endswith(
        "\nTBLPROPERTIES ('a.b' = '1', 'owner' = 'crm', 'delta.feature.allowColumnDefaults' = 'supported')"
    )


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("delta.feature.allowColumnDefaults", "supported"),
        ("delta.feature.allowcolumndefaults", "enabled"),
        ("DELTA.FEATURE.ALLOWCOLUMNDEFAULTS", "supported"),
    ],
)
def test_create_table_with_a_default_and_the_feature_declared_names_it_once(key: str, value: str) -> None:
    created = table("s.t", column("status", default="'new'"), properties={key: value})
    (sql,) = to_sql(CreateTable(created))
    assert sql.endswith(f"\nTBLPROPERTIES ('{key}' = '{value}')")
    assert sql.lower().count("allowcolumndefaults") == 1


def test_create_table_without_defaults_adds_no_feature() -> None:
    created = replace(
        table("s.t", column("id", "bigint", identity=Identity()), column("d", "date", generated="current_date()")),
        clustered_by=("id",),
    )
    assert to_sql(CreateTable(created)) == (
        "CREATE TABLE `s`.`t` (\n"
        "  `id` bigint GENERATED ALWAYS AS IDENTITY (START WITH 1 INCREMENT BY 1),\n"
        "  `d` date GENERATED ALWAYS AS (current_date())\n"
        ") USING DELTA\n"
        "CLUSTER BY (`id`)",
    )


def test_create_table_clause_order_with_everything() -> None:
    created = replace(
        table("s.t", col("a b", "int"), comment="it's", properties={"owner": "crm"}),
        clustered_by=("a b",),
    )
    assert to_sql(CreateTable(created)) == (
        "CREATE TABLE `s`.`t` (\n"
        "  `a b` int\n"
        ") USING DELTA\n"
        "CLUSTER BY (`a b`)\n"
        "COMMENT 'it\\'s'\n"
        "TBLPROPERTIES ('owner' = 'crm')",
    )


# --- whole plans --------------------------------------------------------------------------------


def statements(have: Table, want: Table) -> list[str]:
    return [sql for _action, sql in plan_statements(plan(state(have), state(want)))]


def test_rename_with_a_dependent_check_runs_these_statements() -> None:
    have = table("s.t", col("id", "int"), col("amt", "int"), checks={"pos": "amt > 0"})
    want = table("s.t", col("id", "int"), column("amount", "int", renamed_from="amt"), checks={"pos": "amount > 0"})
    assert statements(have, want) == [
        "ALTER TABLE `s`.`t` SET TBLPROPERTIES ('delta.columnMapping.mode' = 'name')",
        "ALTER TABLE `s`.`t` DROP CONSTRAINT pos",
        "ALTER TABLE `s`.`t` RENAME COLUMN `amt` TO `amount`",
        "ALTER TABLE `s`.`t` ADD CONSTRAINT pos CHECK (amount > 0)",
    ]


def test_new_not_null_column_with_a_default_on_an_empty_table_runs_these_statements() -> None:
    have = live(table("s.t", col("id", "bigint")), num_files=0)
    want = table("s.t", col("id", "bigint"), column("status", nullable=False, default="'new'", comment="s"))
    assert statements(have, want) == [
        "ALTER TABLE `s`.`t` SET TBLPROPERTIES ('delta.feature.allowColumnDefaults' = 'supported')",
        "ALTER TABLE `s`.`t` ADD COLUMNS (`status` string COMMENT 's')",
        "ALTER TABLE `s`.`t` ALTER COLUMN `status` SET DEFAULT 'new'",
        "ALTER TABLE `s`.`t` ADD CONSTRAINT ds_nn_status CHECK (`status` IS NOT NULL)",
    ]


def test_drop_clustered_column_widen_loosen_and_unset_run_these_statements() -> None:
    have = replace(
        table(
            "s.t",
            col("a", "int", nullable=False),
            col("b"),
            col("c", "int"),
            properties={"owner": "crm", "delta.columnMapping.mode": "name"},
        ),
        clustered_by=("a", "b"),
    )
    want = replace(
        table("s.t", col("a", "int"), col("c", "bigint"), properties={"delta.columnMapping.mode": "name"}),
        clustered_by=("a",),
        removed_properties=("owner",),
    )
    assert statements(have, want) == [
        "ALTER TABLE `s`.`t` SET TBLPROPERTIES ('delta.enableTypeWidening' = 'true')",
        "ALTER TABLE `s`.`t` CLUSTER BY (`a`)",
        "ALTER TABLE `s`.`t` DROP COLUMNS (`b`)",
        "ALTER TABLE `s`.`t` ALTER COLUMN `c` TYPE bigint",
        "ALTER TABLE `s`.`t` ALTER COLUMN `a` DROP NOT NULL",
        "ALTER TABLE `s`.`t` UNSET TBLPROPERTIES ('owner')",
    ]


def test_blocked_and_notice_actions_have_no_statements_in_a_plan() -> None:
    # A new NOT NULL column without `backfill:` on a table that may hold rows: blocked.
    have = table("s.t", col("Amount", "int"))
    want = table("s.t", col("amount", "int"), col("n", "string", nullable=False))
    result = plan(state(have), state(want))
    assert [type(a).__name__ for a in result.actions] == ["Unsupported", "Notice"]
    assert plan_statements(result) == ()

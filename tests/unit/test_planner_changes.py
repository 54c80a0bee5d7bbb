"""The planner on changes to existing tables: exact actions, their order by phase, and what blocks.

Prose (EnableFeature.reason, Notice.message, Unsupported.reason/remedy) is matched with ANY in the
exact lists, and checked on its own where it carries facts (both types named, the backfill remedy).
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from typing import Any
from unittest.mock import ANY

import pytest

from delta_sync.model.state import Check, Column, Identity, Table
from delta_sync.planning.actions import (
    Action,
    AddCheck,
    AddColumns,
    AlterColumnType,
    ClusterBy,
    Conversion,
    DropCheck,
    DropColumns,
    DropNotNull,
    EnableFeature,
    Notice,
    Plan,
    PropertyChange,
    RenameColumn,
    RewriteTable,
    SetColumnComment,
    SetDefault,
    SetProperties,
    UnsetProperties,
    Unsupported,
    sort_key,
)
from delta_sync.planning.actions.phases import Phase
from delta_sync.planning.diff.conventions import NOT_NULL_PREFIX, not_null_check, not_null_check_name
from delta_sync.planning.diff.planner import plan
from delta_sync.spark.introspect import column_from_field, table_from_catalog
from tests.unit.builders import col, column, live, name, state, table

T = name("s.t")
COLUMN_MAPPING = EnableFeature(T, "delta.columnMapping.mode", "name", ANY)
TYPE_WIDENING = EnableFeature(T, "delta.enableTypeWidening", "true", ANY)
COLUMN_DEFAULTS = EnableFeature(T, "delta.feature.allowColumnDefaults", "supported", ANY)
CM_ON = {"delta.columnMapping.mode": "name"}
TW_ON = {"delta.enableTypeWidening": "true"}


def blocked(subject: str) -> Unsupported:
    return Unsupported(T, subject, ANY, ANY, ANY)


def rewrite(
    columns: tuple[str, ...],
    *conversions: Conversion,
    partitioned_by: tuple[str, ...] = (),
    clustered_by: tuple[str, ...] = (),
    checks: tuple[Check, ...] = (),
) -> RewriteTable:
    """The rewrite of s.t (no comment, no properties), its reasons matched with ANY."""
    return RewriteTable(T, columns, conversions, partitioned_by, clustered_by, None, (), checks, ANY)


# A column that makes s.t impossible to rewrite (REPLACE ... AS SELECT would lose its identity).
SEQ = column("seq", "bigint", nullable=False, identity=Identity())
NO_REWRITE_FOR_SEQ = (
    "delta-sync cannot rewrite this table: `seq` is an identity column, and REPLACE TABLE ... AS SELECT "
    "(Delta's one-commit rewrite) would make it a plain column and lose its high-water mark; "
)


def notice(subject: str) -> Notice:
    return Notice(T, subject, ANY, ANY)


def run(have: Table, want: Table) -> Plan:
    return plan(state(have), state(want))


def actions(have: Table, want: Table) -> list[Action]:
    return list(run(have, want).actions)


def phases(result: Plan) -> list[Phase]:
    return [a.phase for a in result.actions]


def only_blocked(have: Table, want: Table) -> Unsupported:
    (action,) = actions(have, want)
    assert isinstance(action, Unsupported)
    return action


# --- rename -------------------------------------------------------------------------------------


def test_rename_enables_column_mapping_then_renames() -> None:
    have = table("s.t", col("id", "bigint"), col("amt", "int", comment="c"))
    want = table("s.t", col("id", "bigint"), column("amount", "int", comment="c", renamed_from="amt"))
    result = run(have, want)
    assert list(result.actions) == [COLUMN_MAPPING, RenameColumn(T, "amt", "amount")]
    assert phases(result) == [Phase.ENABLE_FEATURE, Phase.RENAME_COLUMN]


def test_rename_needs_no_feature_when_column_mapping_is_already_name() -> None:
    have = table("s.t", col("id", "bigint"), col("amt", "int"), properties=CM_ON)
    want = table("s.t", col("id", "bigint"), column("amount", "int", renamed_from="amt"), properties=CM_ON)
    assert actions(have, want) == [RenameColumn(T, "amt", "amount")]


def test_rename_without_the_property_declared_keeps_no_property_change() -> None:
    # The table's column mapping property is not in the spec: it is not a difference to undo.
    have = table("s.t", col("id"), col("amt", "int"), properties=CM_ON)
    want = table("s.t", col("id"), column("amount", "int", renamed_from="amt"))
    assert actions(have, want) == [RenameColumn(T, "amt", "amount")]


def test_rename_keeps_the_table_spelling_of_the_old_name() -> None:
    have = table("s.t", col("id"), col("Amt", "int"))
    want = table("s.t", col("id"), column("amount", "int", renamed_from="AMT"))
    assert actions(have, want) == [COLUMN_MAPPING, RenameColumn(T, "Amt", "amount")]


def test_rename_is_inert_once_the_new_name_exists() -> None:
    have = table("s.t", col("id"), col("amount", "int"), properties=CM_ON)
    want = table("s.t", col("id"), column("amount", "int", renamed_from="amt"))
    result = run(have, want)
    assert result.actions == ()
    assert result.is_empty


def test_rename_blocks_when_both_names_exist_and_drops_neither() -> None:
    have = table("s.t", col("id"), col("amt", "int"), col("amount", "int"))
    want = table("s.t", col("id"), column("amount", "int", renamed_from="amt"))
    assert actions(have, want) == [blocked("amount")]
    (only,) = run(have, want).blocked
    assert "`amt`" in only.reason
    assert "`amount`" in only.reason


def test_renamed_column_is_also_diffed_under_its_new_name() -> None:
    have = table("s.t", col("id"), col("amt", "int", comment="old"))
    want = table("s.t", col("id"), column("amount", "bigint", comment="old", renamed_from="amt"))
    assert actions(have, want) == [
        COLUMN_MAPPING,
        TYPE_WIDENING,
        RenameColumn(T, "amt", "amount"),
        AlterColumnType(T, "amount", "int", "bigint"),
    ]


# --- drop ---------------------------------------------------------------------------------------


def test_drop_enables_column_mapping_then_drops_the_columns_in_one_statement() -> None:
    b, c = col("b", "int"), col("c", "string", comment="x")
    have = table("s.t", col("a"), b, c)
    want = table("s.t", col("a"))
    result = run(have, want)
    assert list(result.actions) == [COLUMN_MAPPING, DropColumns(T, (b, c))]
    assert phases(result) == [Phase.ENABLE_FEATURE, Phase.DROP_COLUMNS]


def test_drop_with_column_mapping_on_needs_no_feature() -> None:
    b = col("b", "int")
    have = table("s.t", col("a"), b, properties=CM_ON)
    want = table("s.t", col("a"), properties=CM_ON)
    assert actions(have, want) == [DropColumns(T, (b,))]


def test_dropping_a_partition_column_rewrites_the_table_unpartitioned_then_drops_it() -> None:
    p = col("p", "date")
    have = table("s.t", col("a"), p, partitioned_by=["p"])
    want = table("s.t", col("a"))
    result = run(have, want)
    # The partitioning changes: the rewrite leaves an unpartitioned table, whose `p` is then dropped.
    assert list(result.actions) == [rewrite(("a", "p")), COLUMN_MAPPING, DropColumns(T, (p,))]
    assert phases(result) == [Phase.REWRITE, Phase.ENABLE_FEATURE, Phase.DROP_COLUMNS]
    first = result.actions[0]
    assert isinstance(first, RewriteTable)
    assert first.reasons == (
        "the layout changes (partitioned by p) -> (none): Delta cannot repartition a table in place",
    )


def test_dropping_a_partition_column_of_a_table_delta_sync_cannot_rewrite_is_unsupported() -> None:
    have = table("s.t", SEQ, col("a"), col("p", "date"), partitioned_by=["p"])
    want = table("s.t", SEQ, col("a"))
    # The partitioning itself changes too; nothing is dropped and no feature is enabled.
    assert actions(have, want) == [blocked("p"), blocked("partitioned_by")]
    assert actions(have, want)[1] == Unsupported(
        T,
        "partitioned_by",
        "partitioning changes (p) -> (none); Delta cannot repartition a table in place",
        NO_REWRITE_FOR_SEQ + "keep partitioned_by: [p]",
    )


def test_dropping_a_partition_column_blocks_while_other_drops_still_plan() -> None:
    x = col("x", "int")
    have = table("s.t", col("a"), col("p", "date"), x, partitioned_by=["p"])
    want = table("s.t", col("a"), partitioned_by=["p"])
    assert actions(have, want) == [blocked("p"), COLUMN_MAPPING, DropColumns(T, (x,))]


# --- case-only spelling -------------------------------------------------------------------------


def test_case_only_spelling_difference_is_a_notice_and_the_plan_is_empty() -> None:
    have = table("s.t", col("Amount", "int"))
    want = table("s.t", col("amount", "int"))
    result = run(have, want)
    assert list(result.actions) == [notice("amount")]
    assert result.changes == ()
    assert result.is_empty
    assert result.blocked == ()


def test_case_only_spelling_difference_still_diffs_the_column() -> None:
    have = table("s.t", col("Amount", "int"))
    want = table("s.t", col("amount", "int", comment="new"))
    result = run(have, want)
    assert [type(a).__name__ for a in result.actions] == ["Notice", "SetColumnComment"]
    assert not result.is_empty


def test_case_only_notice_does_not_recommend_renamed_from() -> None:
    (only,) = actions(table("s.t", col("Amount", "int")), table("s.t", col("amount", "int")))
    assert isinstance(only, Notice)
    assert "renamed_from" not in only.message


# --- type changes -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ("tinyint", "smallint"),
        ("smallint", "int"),
        ("int", "bigint"),
        ("tinyint", "bigint"),
        ("float", "double"),
        ("int", "double"),
        ("decimal(10,2)", "decimal(12,4)"),
        ("int", "decimal(12,2)"),
        ("bigint", "decimal(20,0)"),
    ],
)
def test_widening_enables_type_widening_then_alters_the_type(before: str, after: str) -> None:
    have = table("s.t", col("id"), col("n", before))
    want = table("s.t", col("id"), col("n", after))
    result = run(have, want)
    assert list(result.actions) == [TYPE_WIDENING, AlterColumnType(T, "n", before, after)]
    assert phases(result) == [Phase.ENABLE_FEATURE, Phase.ALTER_TYPE]


@pytest.mark.parametrize("enabled", ["true", "TRUE", "True"])
def test_widening_needs_no_feature_when_the_table_has_it(enabled: str) -> None:
    props = {"delta.enableTypeWidening": enabled}
    have = table("s.t", col("n", "int"), properties=props)
    want = table("s.t", col("n", "bigint"), properties=props)
    assert actions(have, want) == [AlterColumnType(T, "n", "int", "bigint")]


def test_widening_enables_the_feature_when_the_table_has_it_switched_off() -> None:
    have = table("s.t", col("n", "int"), properties={"delta.enableTypeWidening": "false"})
    want = table("s.t", col("n", "bigint"))
    assert actions(have, want) == [TYPE_WIDENING, AlterColumnType(T, "n", "int", "bigint")]


def test_several_widenings_share_one_feature_step_and_run_in_column_order() -> None:
    have = table("s.t", col("z", "int"), col("a", "float"))
    want = table("s.t", col("z", "bigint"), col("a", "double"))
    assert actions(have, want) == [
        TYPE_WIDENING,
        AlterColumnType(T, "a", "float", "double"),
        AlterColumnType(T, "z", "int", "bigint"),
    ]


@pytest.mark.parametrize(
    ("before", "after"),
    [("char(5)", "string"), ("varchar(5)", "string"), ("varchar(5)", "varchar(10)"), ("char(3)", "varchar(3)")],
)
def test_plain_type_change_needs_no_feature(before: str, after: str) -> None:
    have = table("s.t", col("c", before))
    want = table("s.t", col("c", after))
    assert actions(have, want) == [AlterColumnType(T, "c", before, after)]


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ("int", "string"),
        ("string", "int"),
        ("bigint", "int"),
        ("decimal(10,2)", "decimal(10,3)"),
        ("bigint", "decimal(20,1)"),
        ("date", "timestamp"),
    ],
)
def test_type_change_delta_cannot_make_in_place_rewrites_the_table_with_a_cast(before: str, after: str) -> None:
    have = table("s.t", col("id"), col("n", before))
    want = table("s.t", col("id"), col("n", after))
    result = run(have, want)
    assert list(result.actions) == [rewrite(("id", "n"), Conversion("n", before, after, f"CAST(`n` AS {after})"))]
    only = result.actions[0]
    assert isinstance(only, RewriteTable)
    assert only.reasons == (f"`n` changes type {before} -> {after} (by CAST to {after}): Delta cannot do it in place",)


@pytest.mark.parametrize(("before", "after"), [("int", "string"), ("string", "int"), ("bigint", "int")])
def test_type_change_on_a_table_delta_sync_cannot_rewrite_is_unsupported_and_names_both_types(
    before: str, after: str
) -> None:
    have = table("s.t", SEQ, col("n", before))
    want = table("s.t", SEQ, col("n", after))
    only = only_blocked(have, want)
    assert only.subject == "n"
    assert only.reason == f"`n` changes type {before} -> {after}, which Delta cannot do in place"
    assert only.remedy == (NO_REWRITE_FOR_SEQ + f"keep `type: {before}`")


def test_type_change_on_a_column_a_generated_column_computes_from_is_unsupported() -> None:
    gen = column("doubled", "bigint", generated="a * 2")
    have = table("s.t", col("a", "int"), gen)
    want = table("s.t", col("a", "bigint"), gen)
    only = only_blocked(have, want)
    assert only.subject == "a"
    assert "doubled" in only.reason


def test_type_change_on_a_column_named_in_a_quoted_generation_expression_is_unsupported() -> None:
    gen = column("m", "bigint", generated="`N` + 1")
    have = table("s.t", col("n", "int"), gen)
    want = table("s.t", col("n", "bigint"), gen)
    only = only_blocked(have, want)
    assert only.subject == "n"
    assert "m" in only.reason


def test_type_change_on_a_column_no_generated_column_uses_is_planned() -> None:
    gen = column("doubled", "bigint", generated="a * 2")
    have = table("s.t", col("a", "int"), col("ab", "int"), gen)
    want = table("s.t", col("a", "int"), col("ab", "bigint"), gen)
    assert actions(have, want) == [TYPE_WIDENING, AlterColumnType(T, "ab", "int", "bigint")]


def test_type_change_on_a_generated_or_identity_column_is_unsupported() -> None:
    gen = column("d", "int", generated="a + 1")
    ident = column("id", "int", identity=Identity())
    have = table("s.t", col("a", "int"), gen, ident)
    want = table("s.t", col("a", "int"), replace(gen, type="bigint"), replace(ident, type="bigint"))
    assert actions(have, want) == [blocked("d"), blocked("id")]


# --- NOT NULL -----------------------------------------------------------------------------------


def test_tightening_adds_the_not_null_check() -> None:
    have = table("s.t", col("qty", "int"))
    want = table("s.t", col("qty", "int", nullable=False))
    result = run(have, want)
    assert list(result.actions) == [AddCheck(T, Check("ds_nn_qty", "`qty` IS NOT NULL"), first=True)]
    assert phases(result) == [Phase.ADD_CHECK_FIRST]


# --- which new rules go first -------------------------------------------------------------------


def test_a_new_rule_over_unchanged_columns_goes_before_the_other_changes() -> None:
    have = table("s.t", col("id", "bigint"), col("qty", "int"))
    want = table("s.t", col("id", "bigint"), col("qty", "int"), col("note", "string"), checks={"qty_pos": "qty > 0"})
    result = run(have, want)
    assert [type(a) for a in result.actions] == [AddCheck, AddColumns]
    assert phases(result) == [Phase.ADD_CHECK_FIRST, Phase.ADD_COLUMNS]


@pytest.mark.parametrize(
    ("have", "want", "before"),
    [
        pytest.param(
            table("s.t", col("id", "bigint")),
            table("s.t", col("id", "bigint"), col("qty", "int"), checks={"qty_pos": "qty > 0"}),
            AddColumns,
            id="added column",
        ),
        pytest.param(
            table("s.t", col("id", "bigint"), col("amt", "int"), properties=CM_ON),
            table("s.t", col("id", "bigint"), column("qty", "int", renamed_from="amt"), checks={"qty_pos": "qty > 0"}),
            RenameColumn,
            id="renamed column",
        ),
        pytest.param(
            table("s.t", col("id", "bigint"), col("qty", "int"), properties=TW_ON),
            table("s.t", col("id", "bigint"), col("qty", "bigint"), checks={"qty_pos": "`qty` > 0"}, properties=TW_ON),
            AlterColumnType,
            id="retyped column",
        ),
        pytest.param(
            table("s.t", col("id", "bigint"), col("qty", "int", comment="old")),
            table("s.t", col("id", "bigint"), col("qty", "int", comment="new"), checks={"qty_pos": "QTY > 0"}),
            SetColumnComment,
            id="column whose comment changes (kept conservative)",
        ),
    ],
)
def test_a_new_rule_over_a_column_the_plan_changes_goes_last(have: Table, want: Table, before: type) -> None:
    result = run(have, want)
    kinds = [type(a) for a in result.actions]
    assert kinds[-1] is AddCheck
    assert before in kinds[:-1]
    rule = result.actions[-1]
    assert isinstance(rule, AddCheck)
    assert not rule.first
    assert rule.phase is Phase.ADD_CHECK


def test_a_replaced_rule_is_not_first_even_over_unchanged_columns() -> None:
    # Its old version is dropped before it is re-added: a violation then would leave the table without either.
    have = table("s.t", col("qty", "int"), checks={"qty_pos": "qty > 0"})
    want = table("s.t", col("qty", "int"), checks={"qty_pos": "qty > 1"})
    result = run(have, want)
    assert [type(a) for a in result.actions] == [DropCheck, AddCheck]
    assert phases(result) == [Phase.DROP_CHECK, Phase.ADD_CHECK]


def test_tightening_is_done_once_the_check_exists() -> None:
    have = table("s.t", column("qty", "int", not_null_by_check=True), checks={"ds_nn_qty": "`qty` IS NOT NULL"})
    want = table("s.t", col("qty", "int", nullable=False))
    assert run(have, want).actions == ()


def test_tightening_matches_the_check_as_delta_reports_it() -> None:
    # Delta keeps what ADD CONSTRAINT was given, re-tokenised; case and spacing do not matter.
    have = table("s.t", col("Qty", "int"), checks={"ds_nn_qty": "`QTY`  is not NULL"})
    want = table("s.t", col("Qty", "int", nullable=False))
    assert run(have, want).actions == ()


def test_loosening_a_schema_not_null_column_drops_not_null() -> None:
    have = table("s.t", col("qty", "int", nullable=False))
    want = table("s.t", col("qty", "int"))
    result = run(have, want)
    assert list(result.actions) == [DropNotNull(T, "qty")]
    assert phases(result) == [Phase.DROP_NOT_NULL]


def test_loosening_a_check_enforced_column_drops_its_check() -> None:
    nn = Check("ds_nn_qty", "`qty` IS NOT NULL")
    have = Table(T, (column("qty", "int", not_null_by_check=True),), checks=(nn,))
    want = table("s.t", col("qty", "int"))
    assert actions(have, want) == [DropCheck(T, nn)]


def test_loosening_an_identity_column_is_unsupported() -> None:
    ident = column("id", "bigint", nullable=False, identity=Identity())
    have = table("s.t", ident)
    want = table("s.t", replace(ident, nullable=True))
    assert actions(have, want) == [blocked("id")]


def test_new_not_null_column_on_an_empty_table_is_added_nullable_with_its_check() -> None:
    have = live(table("s.t", col("id")), num_files=0)
    want = table("s.t", col("id"), col("qty", "int", nullable=False, comment="q"))
    result = run(have, want)
    assert list(result.actions) == [
        AddColumns(T, (Column("qty", "int", nullable=True, comment="q"),)),
        AddCheck(T, Check("ds_nn_qty", "`qty` IS NOT NULL")),
    ]
    assert phases(result) == [Phase.ADD_COLUMNS, Phase.ADD_CHECK]


@pytest.mark.parametrize("num_files", [1, 40, None])
def test_new_not_null_column_on_a_table_that_may_hold_rows_is_unsupported(num_files: int | None) -> None:
    have = live(table("s.t", col("id")), num_files=num_files)
    want = table("s.t", col("id"), col("qty", "int", nullable=False))
    only = only_blocked(have, want)
    assert only.subject == "qty"
    assert "nullable: true" in only.remedy
    assert "`backfill: <SQL expression>`" in only.remedy


def test_new_nullable_column_is_added_whatever_the_table_holds() -> None:
    have = live(table("s.t", col("id")), num_files=None)
    want = table("s.t", col("id"), col("qty", "int"), col("note"))
    assert actions(have, want) == [AddColumns(T, (col("qty", "int"), col("note")))]


# --- generated and identity ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "new",
    [
        column("d", "date", generated="CAST(ts AS DATE)"),
        column("seq", "bigint", identity=Identity()),
        column("seq", "bigint", identity=Identity(1, 1, always=False)),
    ],
)
def test_new_generated_or_identity_column_on_an_existing_table_is_unsupported(new: Column) -> None:
    have = live(table("s.t", col("ts", "timestamp")), num_files=0)
    want = table("s.t", col("ts", "timestamp"), new)
    assert actions(have, want) == [blocked(new.name)]


@pytest.mark.parametrize(
    ("before", "after"),
    [
        (column("d", "date", generated="CAST(ts AS DATE)"), column("d", "date", generated="to_date(ts)")),
        (column("d", "date", generated="CAST(ts AS DATE)"), column("d", "date")),
        (column("d", "date"), column("d", "date", generated="CAST(ts AS DATE)")),
        (column("d", "bigint", identity=Identity()), column("d", "bigint", identity=Identity(5, 2))),
        (column("d", "bigint", identity=Identity()), column("d", "bigint", identity=Identity(always=False))),
        (column("d", "bigint", identity=Identity()), column("d", "bigint")),
        (column("d", "bigint"), column("d", "bigint", identity=Identity())),
    ],
)
def test_changing_generation_or_identity_is_unsupported(before: Column, after: Column) -> None:
    have = table("s.t", col("ts", "timestamp"), before)
    want = table("s.t", col("ts", "timestamp"), after)
    assert actions(have, want) == [blocked("d")]


@pytest.mark.parametrize("spelling", ["cast(ts as date)", "CAST( ts  AS  DATE )", "Cast(TS As Date)"])
def test_same_generation_expression_spelled_differently_is_no_diff(spelling: str) -> None:
    have = table("s.t", col("ts", "timestamp"), column("d", "date", generated="CAST(ts AS DATE)"))
    want = table("s.t", col("ts", "timestamp"), column("d", "date", generated=spelling))
    assert run(have, want).actions == ()


def test_same_identity_is_no_diff() -> None:
    ident = column("id", "bigint", identity=Identity(5, 2, always=True))
    assert run(table("s.t", ident), table("s.t", ident)).actions == ()


# --- defaults -----------------------------------------------------------------------------------


def test_setting_a_default_enables_column_defaults_first() -> None:
    have = table("s.t", col("status"))
    want = table("s.t", column("status", default="'new'"))
    result = run(have, want)
    assert list(result.actions) == [COLUMN_DEFAULTS, SetDefault(T, "status", None, "'new'")]
    assert phases(result) == [Phase.ENABLE_FEATURE, Phase.SET_DEFAULT]


@pytest.mark.parametrize(
    "key",
    ["delta.feature.allowColumnDefaults", "delta.feature.allowcolumndefaults", "DELTA.FEATURE.ALLOWCOLUMNDEFAULTS"],
)
def test_changing_a_default_when_the_table_has_the_feature(key: str) -> None:
    have = table("s.t", column("status", default="'a'"), properties={key: "supported"})
    want = table("s.t", column("status", default="'b'"))
    assert actions(have, want) == [SetDefault(T, "status", "'a'", "'b'")]


def test_dropping_a_default() -> None:
    have = table("s.t", column("status", default="'a'"), properties={"delta.feature.allowColumnDefaults": "supported"})
    want = table("s.t", col("status"))
    assert actions(have, want) == [SetDefault(T, "status", "'a'", None)]


def test_dropping_a_default_on_a_table_without_the_feature_property_still_enables_it() -> None:
    have = table("s.t", column("status", default="'a'"))
    want = table("s.t", col("status"))
    assert actions(have, want) == [COLUMN_DEFAULTS, SetDefault(T, "status", "'a'", None)]


@pytest.mark.parametrize(("current", "declared"), [("current_date()", "CURRENT_DATE( )"), ("'x'", "'x' ")])
def test_same_default_spelled_differently_is_no_diff(current: str, declared: str) -> None:
    props = {"delta.feature.allowColumnDefaults": "supported"}
    have = table("s.t", column("c", default=current), properties=props)
    want = table("s.t", column("c", default=declared))
    assert run(have, want).actions == ()


def test_default_string_literals_compare_case_sensitively() -> None:
    props = {"delta.feature.allowColumnDefaults": "supported"}
    have = table("s.t", column("c", default="'New'"), properties=props)
    want = table("s.t", column("c", default="'new'"))
    assert actions(have, want) == [SetDefault(T, "c", "'New'", "'new'")]


def test_new_column_with_a_default_is_added_without_it_then_given_it() -> None:
    have = table("s.t", col("id"))
    want = table("s.t", col("id"), column("status", comment="s", default="'new'"))
    result = run(have, want)
    assert list(result.actions) == [
        COLUMN_DEFAULTS,
        AddColumns(T, (Column("status", "string", comment="s"),)),
        SetDefault(T, "status", None, "'new'"),
    ]
    assert phases(result) == [Phase.ENABLE_FEATURE, Phase.ADD_COLUMNS, Phase.SET_DEFAULT]


# --- clustering ---------------------------------------------------------------------------------


def clustered(base: Table, *columns: str) -> Table:
    return replace(base, clustered_by=columns)


def test_clustering_change_between_existing_columns() -> None:
    have = clustered(table("s.t", col("a"), col("b")), "a")
    want = clustered(table("s.t", col("a"), col("b")), "b")
    assert actions(have, want) == [ClusterBy(T, ("a",), ("b",), ANY)]


def test_clustering_by_a_new_column_comes_after_the_column_is_added() -> None:
    have = clustered(table("s.t", col("a")), "a")
    want = clustered(table("s.t", col("a"), col("c")), "a", "c")
    result = run(have, want)
    assert list(result.actions) == [AddColumns(T, (col("c"),)), ClusterBy(T, ("a",), ("a", "c"), early=False)]
    assert phases(result) == [Phase.ADD_COLUMNS, Phase.CLUSTER_BY]


def test_clustering_reordered_only_is_no_diff() -> None:
    have = clustered(table("s.t", col("a"), col("b")), "a", "b")
    want = clustered(table("s.t", col("a"), col("b")), "b", "a")
    assert run(have, want).actions == ()


def test_clustering_spelled_in_another_case_is_no_diff() -> None:
    have = clustered(table("s.t", col("a"), col("b")), "a", "b")
    want = clustered(table("s.t", col("a"), col("b")), "A", "B")
    assert run(have, want).actions == ()


def test_removing_clustering_clusters_by_nothing() -> None:
    have = clustered(table("s.t", col("a"), col("b")), "a", "b")
    want = table("s.t", col("a"), col("b"))
    assert actions(have, want) == [ClusterBy(T, ("a", "b"), (), ANY)]


def test_dropping_a_clustered_column_reclusters_early_then_drops() -> None:
    b = col("b", "int")
    have = clustered(table("s.t", col("a"), b, col("c")), "a", "b")
    want = clustered(table("s.t", col("a"), col("c")), "a")
    result = run(have, want)
    assert list(result.actions) == [
        COLUMN_MAPPING,
        ClusterBy(T, ("a", "b"), ("a",), early=True),
        DropColumns(T, (b,)),
    ]
    assert phases(result) == [Phase.ENABLE_FEATURE, Phase.CLUSTER_BY_EARLY, Phase.DROP_COLUMNS]


def _clustering_when_each_drop_runs(have: Table, result: Plan) -> list[set[str]]:
    current = {c.lower() for c in have.clustered_by}
    seen: list[set[str]] = []
    for action in result.actions:
        if isinstance(action, ClusterBy):
            current = {c.lower() for c in action.after}
        elif isinstance(action, DropColumns):
            seen.append(current & {c.key for c in action.columns})
    return seen


def test_dropping_a_clustered_column_while_clustering_by_a_new_one_unclusters_it_first() -> None:
    have = clustered(table("s.t", col("a"), col("b"), col("c")), "a", "b")
    want = clustered(table("s.t", col("a"), col("c"), col("d")), "a", "d")
    result = run(have, want)
    assert _clustering_when_each_drop_runs(have, result) == [set()]
    assert result.actions[-1] == ClusterBy(T, ANY, ("a", "d"), early=False)


def test_clustering_a_partitioned_table_rewrites_it() -> None:
    have = table("s.t", col("a"), col("p", "date"), partitioned_by=["p"])
    want = clustered(table("s.t", col("a"), col("p", "date")), "a")
    assert actions(have, want) == [rewrite(("a", "p"), clustered_by=("a",))]


def test_clustering_a_partitioned_table_delta_sync_cannot_rewrite_is_unsupported() -> None:
    have = table("s.t", SEQ, col("a"), col("p", "date"), partitioned_by=["p"])
    want = clustered(table("s.t", SEQ, col("a"), col("p", "date")), "a")
    assert actions(have, want) == [
        Unsupported(
            T, "clustered_by", "a partitioned table cannot be clustered", NO_REWRITE_FOR_SEQ + "remove clustered_by"
        ),
        blocked("partitioned_by"),
    ]


def test_renaming_a_clustering_column_is_not_a_clustering_change() -> None:
    have = clustered(table("s.t", col("a"), col("b", "int"), properties=CM_ON), "b")
    want = clustered(table("s.t", col("a"), column("b2", "int", renamed_from="b"), properties=CM_ON), "b2")
    assert actions(have, want) == [RenameColumn(T, "b", "b2")]


# --- partitioning and renames -------------------------------------------------------------------


def test_renaming_a_partition_column_is_planned() -> None:
    have = table("s.t", col("a"), col("p", "date"), partitioned_by=["p"])
    want = table("s.t", col("a"), column("p2", "date", renamed_from="p"), partitioned_by=["p2"])
    assert actions(have, want) == [COLUMN_MAPPING, RenameColumn(T, "p", "p2")]


# --- columns a generated column computes from ---------------------------------------------------


def test_renaming_a_column_a_generated_column_uses_is_unsupported() -> None:
    gen = column("d", "date", generated="CAST(ts AS DATE)")
    have = table("s.t", col("ts", "timestamp"), gen)
    want = table("s.t", column("ts2", "timestamp", renamed_from="ts"), gen)
    assert [type(a) for a in actions(have, want)] == [Unsupported]


def test_dropping_a_column_a_generated_column_uses_is_unsupported() -> None:
    gen = column("d", "date", generated="CAST(ts AS DATE)")
    have = table("s.t", col("x"), col("ts", "timestamp"), gen)
    want = table("s.t", col("x"), gen)
    assert [type(a) for a in actions(have, want)] == [Unsupported]


# --- features the planner misses ----------------------------------------------------------------


def test_column_mapping_mode_id_needs_no_feature_for_a_rename() -> None:
    props = {"delta.columnMapping.mode": "id"}
    have = table("s.t", col("a"), col("b"), properties=props)
    want = table("s.t", col("a"), column("c", renamed_from="b"), properties=props)
    assert actions(have, want) == [RenameColumn(T, "b", "c")]


def test_new_timestamp_ntz_column_enables_the_timestamp_ntz_feature() -> None:
    have = table("s.t", col("a"))
    want = table("s.t", col("a"), col("seen", "timestamp_ntz"))
    assert actions(have, want) == [
        EnableFeature(T, "delta.feature.timestampNtz", "supported", ANY),
        AddColumns(T, (col("seen", "timestamp_ntz"),)),
    ]


def test_date_to_timestamp_ntz_is_widened() -> None:
    have = table("s.t", col("d", "date"))
    want = table("s.t", col("d", "timestamp_ntz"))
    assert actions(have, want) == [
        TYPE_WIDENING,
        EnableFeature(T, "delta.feature.timestampNtz", "supported", ANY),
        AlterColumnType(T, "d", "date", "timestamp_ntz"),
    ]


# --- properties ---------------------------------------------------------------------------------


def test_removed_properties_present_are_unset_with_their_values() -> None:
    have = table("s.t", col("a"), properties={"owner": "crm", "team": "x", "delta.appendOnly": "false"})
    want = replace(
        table("s.t", col("a"), properties={"delta.appendOnly": "false"}), removed_properties=("owner", "team")
    )
    result = run(have, want)
    assert list(result.actions) == [UnsetProperties(T, (("owner", "crm"), ("team", "x")))]
    assert phases(result) == [Phase.UNSET_PROPERTIES]


def test_removed_properties_absent_are_nothing() -> None:
    have = table("s.t", col("a"), properties={"owner": "crm"})
    want = replace(table("s.t", col("a")), removed_properties=("team",))
    assert run(have, want).actions == ()


def test_removed_delta_property_matches_any_case() -> None:
    have = table("s.t", col("a"), properties={"delta.appendOnly": "true"})
    want = replace(table("s.t", col("a")), removed_properties=("delta.appendonly",))
    assert actions(have, want) == [UnsetProperties(T, (("delta.appendonly", "true"),))]


def test_a_declared_property_equal_to_a_needed_feature_appears_once_as_the_feature() -> None:
    have = table("s.t", col("a"), col("b"))
    want = table(
        "s.t",
        col("a"),
        column("c", renamed_from="b"),
        properties={"delta.columnMapping.mode": "name", "owner": "crm"},
    )
    assert actions(have, want) == [
        COLUMN_MAPPING,
        RenameColumn(T, "b", "c"),
        SetProperties(T, (PropertyChange("owner", None, "crm"),)),
    ]


def test_declared_type_widening_in_another_case_appears_once_as_the_feature() -> None:
    have = table("s.t", col("n", "int"))
    want = table("s.t", col("n", "bigint"), properties={"delta.enableTypeWidening": "TRUE"})
    assert actions(have, want) == [TYPE_WIDENING, AlterColumnType(T, "n", "int", "bigint")]


def test_declared_column_mapping_without_a_need_is_a_plain_property_change() -> None:
    have = table("s.t", col("a"))
    want = table("s.t", col("a"), properties=CM_ON)
    assert actions(have, want) == [SetProperties(T, (PropertyChange("delta.columnMapping.mode", None, "name"),))]


# --- checks that depend on changed columns ------------------------------------------------------


def test_check_on_a_renamed_column_is_dropped_before_and_added_after() -> None:
    old, new = Check("pos", "amt > 0"), Check("pos", "amount > 0")
    have = table("s.t", col("id", "int"), col("amt", "int"), checks={"pos": "amt > 0", "id_pos": "id > 0"})
    want = table(
        "s.t",
        col("id", "int"),
        column("amount", "int", renamed_from="amt"),
        checks={"pos": "amount > 0", "id_pos": "id > 0"},
    )
    result = run(have, want)
    assert list(result.actions) == [
        COLUMN_MAPPING,
        DropCheck(T, old),
        RenameColumn(T, "amt", "amount"),
        AddCheck(T, new, replaces=old),
    ]
    assert phases(result) == [Phase.ENABLE_FEATURE, Phase.DROP_CHECK, Phase.RENAME_COLUMN, Phase.ADD_CHECK]


def test_check_on_a_retyped_column_is_dropped_before_and_re_added_after() -> None:
    pos = Check("pos", "qty > 0")
    have = table("s.t", col("qty", "int"), checks={"pos": "qty > 0"})
    want = table("s.t", col("qty", "bigint"), checks={"pos": "qty > 0"})
    result = run(have, want)
    assert list(result.actions) == [
        TYPE_WIDENING,
        DropCheck(T, pos),
        AlterColumnType(T, "qty", "int", "bigint"),
        AddCheck(T, pos, replaces=pos, moved_for=moved("qty")),
    ]
    assert phases(result) == [Phase.ENABLE_FEATURE, Phase.DROP_CHECK, Phase.ALTER_TYPE, Phase.ADD_CHECK]


def test_check_quoting_a_retyped_column_is_found() -> None:
    pos = Check("pos", "`Qty` > 0")
    have = table("s.t", col("qty", "int"), checks={"pos": "`Qty` > 0"})
    want = table("s.t", col("qty", "bigint"), checks={"pos": "`Qty` > 0"})
    assert actions(have, want) == [
        TYPE_WIDENING,
        DropCheck(T, pos),
        AlterColumnType(T, "qty", "int", "bigint"),
        AddCheck(T, pos, replaces=pos, moved_for=moved("qty")),
    ]


def test_check_on_a_dropped_column_is_dropped_before_and_its_new_form_added_after() -> None:
    old, new = Check("either", "a > 0 OR b > 0"), Check("either", "a > 0")
    b = col("b", "int")
    have = table("s.t", col("a", "int"), b, checks={"either": "a > 0 OR b > 0"})
    want = table("s.t", col("a", "int"), checks={"either": "a > 0"})
    result = run(have, want)
    assert list(result.actions) == [
        COLUMN_MAPPING,
        DropCheck(T, old),
        DropColumns(T, (b,)),
        AddCheck(T, new, replaces=old),
    ]
    assert phases(result) == [Phase.ENABLE_FEATURE, Phase.DROP_CHECK, Phase.DROP_COLUMNS, Phase.ADD_CHECK]


def test_check_on_a_dropped_column_the_spec_removes_is_only_dropped() -> None:
    only_b = Check("b_pos", "b > 0")
    b = col("b", "int")
    have = table("s.t", col("a", "int"), b, checks={"b_pos": "b > 0"})
    want = table("s.t", col("a", "int"))
    assert actions(have, want) == [COLUMN_MAPPING, DropCheck(T, only_b), DropColumns(T, (b,))]


def test_check_on_a_column_whose_name_is_a_prefix_is_left_alone() -> None:
    have = table("s.t", col("a", "int"), col("ab", "int"), checks={"ab_pos": "ab > 0"})
    want = table("s.t", col("a", "bigint"), col("ab", "int"), checks={"ab_pos": "ab > 0"})
    assert actions(have, want) == [TYPE_WIDENING, AlterColumnType(T, "a", "int", "bigint")]


def test_not_null_check_of_a_renamed_column_moves_to_the_new_name() -> None:
    old = Check("ds_nn_amt", "`amt` IS NOT NULL")
    have = table("s.t", col("id"), column("amt", "int", not_null_by_check=True), checks={old.name: old.expression})
    want = table("s.t", col("id"), column("amount", "int", nullable=False, renamed_from="amt"))
    assert actions(have, want) == [
        COLUMN_MAPPING,
        DropCheck(T, old),
        RenameColumn(T, "amt", "amount"),
        AddCheck(T, Check("ds_nn_amount", "`amount` IS NOT NULL")),
    ]


def test_not_null_check_of_a_retyped_column_is_dropped_and_re_added() -> None:
    nn = Check("ds_nn_qty", "`qty` IS NOT NULL")
    have = table("s.t", column("qty", "int", not_null_by_check=True), checks={nn.name: nn.expression})
    want = table("s.t", col("qty", "bigint", nullable=False))
    assert actions(have, want) == [
        TYPE_WIDENING,
        DropCheck(T, nn),
        AlterColumnType(T, "qty", "int", "bigint"),
        AddCheck(T, nn, replaces=nn, moved_for=moved("qty")),
    ]


# --- NOT NULL check names -----------------------------------------------------------------------

_PLAIN_IDENT = re.compile(r"[a-z_][a-z0-9_]*")


@pytest.mark.parametrize(
    "column_name",
    ["qty", "Qty", "QTY", "a b", "a_b", "a`b", "order-id", "naïve", "1st", "a.b", "é", "x" * 200],
)
def test_not_null_check_name_is_a_plain_lower_case_identifier(column_name: str) -> None:
    check_name = not_null_check_name(column_name)
    assert check_name.startswith(NOT_NULL_PREFIX)
    assert _PLAIN_IDENT.fullmatch(check_name)
    assert check_name == not_null_check_name(column_name)


def test_not_null_check_name_of_a_plain_name_is_readable() -> None:
    assert not_null_check_name("qty") == "ds_nn_qty"
    assert not_null_check_name("Order_ID") == "ds_nn_order_id"


def test_not_null_check_names_of_names_that_flatten_alike_differ() -> None:
    names = ["a b", "a_b", "a-b", "a`b", "A_B", "a.b"]
    checks = {n: not_null_check_name(n) for n in names}
    assert checks["a_b"] == checks["A_B"] == "ds_nn_a_b"
    assert re.fullmatch(r"ds_nn_a_b_[0-9a-f]{6}", checks["a b"])
    distinct = {checks[n] for n in ["a b", "a_b", "a-b", "a`b", "a.b"]}
    assert len(distinct) == 5


def test_not_null_check_name_ignores_case_for_odd_names() -> None:
    assert not_null_check_name("A B") == not_null_check_name("a b")


def test_check_enforced_odd_name_spelled_in_another_case_is_only_a_notice() -> None:
    nn = not_null_check(Column("A B", "int"))
    have = table("s.t", column("A B", "int", not_null_by_check=True), checks={nn.name: nn.expression})
    want = table("s.t", col("a b", "int", nullable=False))
    assert actions(have, want) == [notice("a b")]


def test_not_null_check_quotes_the_column() -> None:
    assert not_null_check(Column("a`b", "int")) == Check(not_null_check_name("a`b"), "`a``b` IS NOT NULL")
    assert not_null_check(Column("a b", "int")).expression == "`a b` IS NOT NULL"


def test_tightening_an_odd_column_name() -> None:
    have = table("s.t", col("Unit Price", "int"))
    want = table("s.t", col("Unit Price", "int", nullable=False))
    (add,) = actions(have, want)
    assert isinstance(add, AddCheck)
    assert re.fullmatch(r"ds_nn_unit_price_[0-9a-f]{6}", add.check.name)
    assert add.check.expression == "`Unit Price` IS NOT NULL"


# --- the whole ordering -------------------------------------------------------------------------


def test_every_kind_of_change_in_one_table_runs_in_phase_order() -> None:
    drop_me = col("legacy", "int")
    have = live(
        table(
            "s.t",
            col("id", "bigint", nullable=False),
            col("amt", "int"),
            col("qty", "int"),
            drop_me,
            col("note"),
            col("flag", "boolean", nullable=False),
            checks={"pos": "amt > 0"},
            properties={"owner": "a", "old": "x"},
        ),
        num_files=0,
        clustered_by=("legacy",),
    )
    want = replace(
        table(
            "s.t",
            col("id", "bigint", nullable=False),
            column("amount", "int", renamed_from="amt"),
            col("qty", "bigint"),
            column("note", default="'n'"),
            col("flag", "boolean"),
            col("extra", "int", nullable=False),
            checks={"pos": "amount > 0"},
            properties={"owner": "b"},
        ),
        clustered_by=("id",),
        removed_properties=("old",),
    )
    result = run(have, want)
    old, new = Check("pos", "amt > 0"), Check("pos", "amount > 0")
    assert list(result.actions) == [
        COLUMN_MAPPING,
        TYPE_WIDENING,
        COLUMN_DEFAULTS,
        DropCheck(T, old),
        ClusterBy(T, ("legacy",), ("id",), early=True),
        RenameColumn(T, "amt", "amount"),
        DropColumns(T, (drop_me,)),
        AlterColumnType(T, "qty", "int", "bigint"),
        DropNotNull(T, "flag"),
        AddColumns(T, (col("extra", "int"),)),
        SetDefault(T, "note", None, "'n'"),
        SetProperties(T, (PropertyChange("owner", "a", "b"),)),
        UnsetProperties(T, (("old", "x"),)),
        AddCheck(T, Check("ds_nn_extra", "`extra` IS NOT NULL")),
        AddCheck(T, new, replaces=old),
    ]
    assert [sort_key(a) for a in result.actions] == sorted(sort_key(a) for a in result.actions)


# --- the current side: Delta's log schema -> model ----------------------------------------------

# Fields exactly as Delta 4.4 writes them to the log's metaData.schemaString.
LOG_FIELDS = [
    '{"name":"id","type":"long","nullable":true,"metadata":{"delta.identity.step":2,"comment":"k",'
    '"delta.identity.allowExplicitInsert":false,"delta.identity.start":5}}',
    '{"name":"d","type":"date","nullable":true,"metadata":{"delta.generationExpression":"CAST(ts AS DATE)"}}',
    '{"name":"status","type":"string","nullable":true,"metadata":{"CURRENT_DEFAULT":"\'new\'"}}',
]


def _field(text: str) -> dict[str, Any]:
    value: dict[str, Any] = json.loads(text)
    return value


def test_column_from_field_reads_identity() -> None:
    assert column_from_field(_field(LOG_FIELDS[0])) == Column(
        "id", "bigint", nullable=True, comment="k", identity=Identity(start=5, step=2, always=True)
    )


def test_column_from_field_reads_the_generation_expression() -> None:
    assert column_from_field(_field(LOG_FIELDS[1])) == Column("d", "date", generated="CAST(ts AS DATE)")


def test_column_from_field_reads_the_default() -> None:
    assert column_from_field(_field(LOG_FIELDS[2])) == Column("status", "string", default="'new'")


def test_column_from_field_reads_identity_by_default() -> None:
    field = {
        "name": "seq",
        "type": "long",
        "nullable": False,
        "metadata": {
            "delta.identity.start": 1,
            "delta.identity.step": 1,
            "delta.identity.allowExplicitInsert": True,
            "delta.identity.highWaterMark": 41,
        },
    }
    assert column_from_field(field) == Column("seq", "bigint", nullable=False, identity=Identity(1, 1, False))


def test_column_from_field_ignores_column_mapping_and_type_change_metadata() -> None:
    field = {
        "name": "n",
        "type": "long",
        "nullable": True,
        "metadata": {
            "delta.columnMapping.id": 3,
            "delta.columnMapping.physicalName": "col-6f1b0e1d-8c1e-4b8f-9d7a-2f3c4b5a6d7e",
            "delta.typeChanges": [{"toType": "long", "fromType": "integer"}],
        },
    }
    assert column_from_field(field) == Column("n", "bigint")


def test_log_schema_and_the_matching_spec_plan_nothing() -> None:
    fields = [_field(f) for f in LOG_FIELDS]
    fields.insert(2, {"name": "ts", "type": "timestamp", "nullable": True, "metadata": {}})
    schema = {"type": "struct", "fields": fields}
    have = table_from_catalog(T, schema, None, [], {}, ["identityColumns", "generatedColumns", "allowColumnDefaults"])
    want = table(
        "s.t",
        column("id", "bigint", comment="k", identity=Identity(5, 2)),
        column("d", "date", generated="cast(ts as date)"),
        col("ts", "timestamp"),
        column("status", default="'new'"),
    )
    assert run(have, want).actions == ()


def test_table_from_catalog_reads_clustering_and_file_count() -> None:
    schema = {"type": "struct", "fields": [_field(f) for f in LOG_FIELDS]}
    result = table_from_catalog(T, schema, "c", [], {}, ["clustering"], clustering_columns=["d", "id"], num_files=7)
    assert result.clustered_by == ("d", "id")
    assert result.num_files == 7
    assert result.partitioned_by == ()
    assert result.property_map == {"delta.feature.clustering": "supported"}


def test_table_from_catalog_defaults_to_no_clustering_and_an_unknown_file_count() -> None:
    schema = {"type": "struct", "fields": [_field(LOG_FIELDS[2])]}
    result = table_from_catalog(T, schema, None, [], {}, [])
    assert result.clustered_by == ()
    assert result.num_files is None


def test_table_from_catalog_marks_columns_enforced_by_a_not_null_check() -> None:
    fields = [
        {"name": "qty", "type": "integer", "nullable": True, "metadata": {}},
        {"name": "Unit Price", "type": "integer", "nullable": True, "metadata": {}},
        {"name": "strict", "type": "integer", "nullable": False, "metadata": {}},
        {"name": "other", "type": "integer", "nullable": True, "metadata": {}},
    ]
    odd = not_null_check_name("Unit Price")
    properties = {
        "delta.constraints.ds_nn_qty": "`qty` IS NOT NULL",
        f"delta.constraints.{odd}": "`Unit Price` IS NOT NULL",
        "delta.constraints.ds_nn_strict": "`strict` IS NOT NULL",
        "delta.constraints.other_pos": "other > 0",
    }
    result = table_from_catalog(T, {"type": "struct", "fields": fields}, None, [], properties, [])
    assert [(c.name, c.nullable, c.not_null_by_check) for c in result.columns] == [
        ("qty", True, True),
        ("Unit Price", True, True),
        ("strict", False, False),
        ("other", True, False),
    ]
    assert [c.name for c in result.checks] == sorted(["ds_nn_qty", odd, "ds_nn_strict", "other_pos"])


def moved(column: str) -> str:
    """Why a rule over `column` is dropped and re-added unchanged, as the plan says it."""
    return (
        f"dropped and re-added unchanged around the change of `{column}`: Delta refuses to retype or drop "
        "a column that a CHECK reads"
    )

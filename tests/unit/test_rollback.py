"""Rollback without Spark: the stamps of a plan's commits, what undoing a plan means for a table given its
history (`rollback.undo_of`), the table a rollback aims at (`rollback.reverse`) and what the planner makes
of it, and the rollback's own actions through DDL, hazards, rendering and the plan file codec."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from delta_sync.model.catalog import Commit
from delta_sync.model.state import Check, Table, TableName
from delta_sync.planfile import codec as plancodec
from delta_sync.planning import ddl, hazard_policy, hazard_rules
from delta_sync.planning.actions import (
    Action,
    AddCheck,
    AddColumns,
    DropCheck,
    DropColumns,
    DropFeature,
    DropTable,
    Notice,
    Plan,
    PropertyChange,
    RenameColumn,
    RestoreTable,
    SetColumnComment,
    SetProperties,
    UnsetProperties,
    sort_key,
    subject,
)
from delta_sync.planning.actions.phases import Phase
from delta_sync.planning.diff.planner import plan as make_plan
from delta_sync.planning.hazards import Assessment, Hazard
from delta_sync.planning.rollback import (
    Undo,
    Way,
    describe,
    features_enabled,
    reverse,
    rollback_stamp,
    stamp,
    touched,
    undo_of,
)
from delta_sync.planning.statements import Kind, Statement
from delta_sync.render import text as render
from delta_sync.render.actions import action_lines
from delta_sync.render.document import plan_json
from delta_sync.render.sql import render_sql
from delta_sync.review import policy
from tests.unit.builders import col, name, state, table

PLAN = "a1b2c3d4e5f60718"
OTHER_PLAN = "ffeeddccbbaa9988"
ROLLBACK = "0123456789abcdef"
T = name("shop.orders")
ENGINE = "Apache-Spark/4.2.0 Delta-Lake/4.4.1"


def metadata(plan_id: str, kind: Kind = Kind.ADD_COLUMNS, rolls_back: str | None = None) -> str:
    """A commit's userMetadata exactly as apply writes it."""
    return policy.commit_metadata(plan_id, Statement(str(T), kind, "ALTER TABLE ..."), rolls_back)


def commit(
    version: int,
    operation: str = "WRITE",
    *,
    plan: str | None = None,
    rolls_back: str | None = None,
    user: str | None = None,
    engine: str | None = None,
    parameters: dict[str, str] | None = None,
    kind: Kind = Kind.ADD_COLUMNS,
) -> Commit:
    """One history entry; `plan` stamps it as one of that plan's commits (a rollback's with `rolls_back`)."""
    return Commit(
        version=version,
        timestamp=f"2026-11-25 10:{version:02d}:00",
        operation=operation,
        user=user,
        metadata=None if plan is None else metadata(plan, kind, rolls_back),
        engine=engine,
        parameters=tuple(sorted((parameters or {}).items())),
    )


def before_history() -> list[Commit]:
    """The table's history up to the plan: created and filled by others (versions 0-3)."""
    return [
        commit(0, "CREATE TABLE", engine=ENGINE),
        commit(1, "WRITE", user="etl"),
        commit(2, "SET TBLPROPERTIES", user="etl"),
        commit(3, "MERGE", user="etl"),
    ]


def plan_commits(*versions: int) -> list[Commit]:
    return [commit(v, "ADD COLUMNS", plan=PLAN) for v in versions]


def undo(history: list[Commit]) -> Undo:
    """undo_of for PLAN on T, newest first as DESCRIBE HISTORY lists it (undo_of takes any order)."""
    found = undo_of(PLAN, T, sorted(history, key=lambda c: -c.version))
    assert found is not None
    return found


# --- stamps -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        None,
        "",
        "nightly load",  # not JSON
        "{not json",
        "[1, 2]",  # JSON, not an object
        '"delta-sync"',
        "null",
        '{"team": "etl"}',  # JSON object, not ours
        '{"delta-sync": "a1b2"}',  # our key, not our shape
        '{"delta-sync": ["a1b2"]}',
    ],
)
def test_stamp_of_a_commit_that_is_not_ours_is_empty(text: str | None) -> None:
    assert stamp(Commit(4, "t", "WRITE", metadata=text)) == {}


def test_stamp_of_our_commit_is_what_apply_recorded() -> None:
    assert stamp(commit(5, "ADD COLUMNS", plan=PLAN)) == {"plan": PLAN, "action": "AddColumns"}
    stamped = Commit(5, "t", "SET TBLPROPERTIES", metadata='{"delta-sync":{"plan":"x","restore_version":3},"a":1}')
    assert stamp(stamped) == {"plan": "x", "restore_version": 3}


def test_stamp_survives_any_text_in_someone_elses_metadata() -> None:
    assert stamp(Commit(4, "t", "WRITE", metadata="[" * 100_000)) == {}


def test_commit_metadata_of_a_rollback_names_the_plan_it_undoes() -> None:
    statement = Statement(str(T), Kind.RESTORE_TABLE, "RESTORE TABLE ...")
    text = policy.commit_metadata(ROLLBACK, statement, PLAN)
    assert text == '{"delta-sync":{"plan":"0123456789abcdef","action":"RestoreTable","rollback":"a1b2c3d4e5f60718"}}'
    assert stamp(Commit(9, "t", "RESTORE", metadata=text)) == {
        "plan": ROLLBACK,
        "action": "RestoreTable",
        "rollback": PLAN,
    }
    assert "rollback" not in json.loads(policy.commit_metadata(ROLLBACK, statement))["delta-sync"]


def test_rollback_stamp() -> None:
    text = rollback_stamp(ROLLBACK, PLAN, "DropTable")
    assert text == '{"delta-sync":{"plan":"0123456789abcdef","rollback":"a1b2c3d4e5f60718","action":"DropTable"}}'
    assert stamp(Commit(9, "t", "DROP TABLE", metadata=text)) == {
        "plan": ROLLBACK,
        "rollback": PLAN,
        "action": "DropTable",
    }


def test_describe_names_the_version_the_operation_and_who() -> None:
    assert describe(commit(8, "WRITE", user="bob", engine=ENGINE)) == "version 8 (WRITE by bob)"
    assert describe(commit(8, "MERGE", engine=ENGINE)) == f"version 8 (MERGE by {ENGINE})"
    assert describe(commit(8, "OPTIMIZE")) == "version 8 (OPTIMIZE)"


def test_touched_by_the_plan_or_a_rollback_of_it() -> None:
    assert touched(PLAN, [*before_history(), *plan_commits(4)])
    assert touched(PLAN, [*before_history(), commit(4, "RESTORE", plan=ROLLBACK, rolls_back=PLAN)])
    assert not touched(PLAN, before_history())
    assert not touched(PLAN, [commit(4, "ADD COLUMNS", plan=OTHER_PLAN)])
    assert not touched(PLAN, [commit(4, "RESTORE", plan=ROLLBACK, rolls_back=OTHER_PLAN)])
    # Plan ids compare exactly.
    assert not touched(PLAN, [commit(4, "RESTORE", plan=PLAN.upper())])


# --- undo_of ----------------------------------------------------------------------------------------


def test_no_commit_of_the_plan_means_nothing_to_undo() -> None:
    assert undo_of(PLAN, T, []) is None
    assert undo_of(PLAN, T, before_history()) is None
    assert undo_of(PLAN, T, [*before_history(), commit(4, "ADD COLUMNS", plan=OTHER_PLAN)]) is None
    # A rollback of the plan is not the plan.
    assert undo_of(PLAN, T, [commit(4, "RESTORE", plan=ROLLBACK, rolls_back=PLAN)]) is None


def test_only_the_plans_commits_since_restore_to_the_version_before_it() -> None:
    found = undo([*before_history(), *plan_commits(4, 5, 6)])
    assert found.way is Way.RESTORE
    assert found.table == T
    assert found.plan_id == PLAN
    assert found.before == 3
    assert found.mine == (4, 5, 6)
    assert found.last == 6
    assert found.others == ()
    assert found.writers == ()
    assert found.renames == ()
    assert found.why == f"nobody wrote the table since plan {PLAN}"


def test_an_optimize_since_still_restores_and_says_so() -> None:
    optimize = commit(7, "OPTIMIZE", engine=ENGINE)
    found = undo([*before_history(), *plan_commits(4, 5, 6), optimize])
    assert found.way is Way.RESTORE
    assert found.before == 3
    assert found.others == (optimize,)
    assert found.writers == ()
    assert found.why == (
        f"nobody wrote the table since plan {PLAN} (only version 7 (OPTIMIZE by {ENGINE}), which changes no data)"
    )


@pytest.mark.parametrize("operation", ["WRITE", "MERGE", "UPDATE", "DELETE", "STREAMING UPDATE", "RESTORE"])
def test_a_write_since_plans_the_reverse_change_forward(operation: str) -> None:
    optimize, write = commit(7, "OPTIMIZE"), commit(8, operation, user="bob")
    found = undo([*before_history(), *plan_commits(4, 5), optimize, write])
    assert found.way is Way.FORWARD
    assert found.before == 3
    assert found.mine == (4, 5)
    assert found.others == (optimize, write)
    assert found.writers == (write,)
    # The why names the commit that wrote, not the OPTIMIZE.
    assert found.why == (
        f"written since plan {PLAN} by version 8 ({operation} by bob): a RESTORE would discard that, "
        "so the reverse change is planned forward and keeps it"
    )


def test_a_metadata_change_by_someone_else_is_no_writer_but_still_no_restore() -> None:
    change = commit(6, "SET TBLPROPERTIES", user="bob")
    found = undo([*before_history(), *plan_commits(4, 5), change])
    assert found.way is Way.FORWARD  # a RESTORE would undo bob's property too
    assert found.others == (change,)
    assert found.writers == ()
    assert "version 6 (SET TBLPROPERTIES by bob)" in found.why


def test_a_write_between_the_plans_commits_counts() -> None:
    write = commit(5, "WRITE", user="bob")
    found = undo(
        [*before_history(), commit(4, "ADD COLUMNS", plan=PLAN), write, commit(6, "ADD CONSTRAINT", plan=PLAN)]
    )
    assert found.way is Way.FORWARD
    assert found.mine == (4, 6)
    assert found.others == (write,)
    assert found.writers == (write,)


def test_a_table_the_plan_created_is_dropped_and_only_row_writers_are_named() -> None:
    create = commit(0, "CREATE TABLE", plan=PLAN, kind=Kind.CREATE_TABLE)
    check = commit(1, "ADD CONSTRAINT", plan=PLAN, kind=Kind.ADD_CHECK)
    others = [
        commit(2, "SET TBLPROPERTIES", user="bob"),
        commit(3, "WRITE", user="bob"),
        commit(4, "OPTIMIZE"),
        commit(5, "ADD COLUMNS", plan=OTHER_PLAN),
        commit(6, "MERGE", engine=ENGINE),
        commit(7, "VACUUM START"),
        commit(8, "VACUUM END"),
    ]
    found = undo([create, check, *others])
    assert found.way is Way.DROP
    assert found.before == -1
    assert found.mine == (0, 1)
    assert found.others == tuple(others)
    assert [describe(c) for c in found.writers] == ["version 3 (WRITE by bob)", f"version 6 (MERGE by {ENGINE})"]
    assert found.why == f"plan {PLAN} created it"


def test_a_table_the_plan_created_that_nobody_wrote_is_dropped_with_no_writer() -> None:
    found = undo(
        [commit(0, "CREATE TABLE", plan=PLAN, kind=Kind.CREATE_TABLE), commit(1, "SET TBLPROPERTIES", user="x")]
    )
    assert found.way is Way.DROP
    assert found.writers == ()


def test_a_create_at_a_later_version_is_not_a_table_the_plan_created() -> None:
    # The plan's first commit is not the table's first: the table existed before it.
    found = undo(
        [*before_history(), commit(4, "CREATE OR REPLACE TABLE AS SELECT", plan=PLAN, kind=Kind.REWRITE_TABLE)]
    )
    assert found.way is Way.RESTORE
    assert found.before == 3


def test_a_half_applied_plan_undoes_what_landed() -> None:
    # The plan had three statements for the table; apply stopped after the second.
    found = undo([*before_history(), *plan_commits(4, 5)])
    assert found.way is Way.RESTORE
    assert found.before == 3
    assert found.mine == (4, 5)
    assert found.last == 5


def test_earlier_rollbacks_of_the_plan_are_not_someone_elses_commits() -> None:
    mine = plan_commits(4, 5)
    undone = [
        commit(6, "DROP CONSTRAINT", plan=ROLLBACK, rolls_back=PLAN, kind=Kind.DROP_CHECK),
        commit(7, "RESTORE", plan="1111111111111111", rolls_back=PLAN, kind=Kind.RESTORE_TABLE),
    ]
    found = undo([*before_history(), *mine, *undone])
    assert found.way is Way.RESTORE
    assert found.others == ()
    assert found.mine == (4, 5)


def test_a_rollback_of_another_plan_is_someone_elses_commit() -> None:
    other = commit(6, "RESTORE", plan=ROLLBACK, rolls_back=OTHER_PLAN, kind=Kind.RESTORE_TABLE)
    found = undo([*before_history(), *plan_commits(4, 5), other])
    assert found.way is Way.FORWARD
    assert found.others == (other,)


def test_another_plans_commits_since_are_changes_by_others() -> None:
    theirs = commit(6, "ADD CONSTRAINT", plan=OTHER_PLAN, kind=Kind.ADD_CHECK)
    backfill = commit(7, "UPDATE", plan=OTHER_PLAN, kind=Kind.BACKFILL)
    found = undo([*before_history(), *plan_commits(4, 5), theirs, backfill])
    assert found.way is Way.FORWARD
    assert found.others == (theirs, backfill)
    assert found.writers == (backfill,)
    assert "version 6 (ADD CONSTRAINT)" in found.why
    assert "version 7 (UPDATE)" in found.why


def test_renames_come_from_the_plans_rename_commits_in_order() -> None:
    history = [
        *before_history(),
        commit(4, "SET TBLPROPERTIES", plan=PLAN, kind=Kind.ENABLE_FEATURE),
        commit(
            5,
            "RENAME COLUMN",
            plan=PLAN,
            kind=Kind.RENAME_COLUMN,
            parameters={"oldColumnPath": "cust", "newColumnPath": "customer_id"},
        ),
        commit(
            6,
            "RENAME COLUMN",
            plan=PLAN,
            kind=Kind.RENAME_COLUMN,
            parameters={"oldColumnPath": "amt", "newColumnPath": "amount"},
        ),
        # Not the plan's rename: someone else's, and one whose parameters say nothing.
        commit(7, "RENAME COLUMN", user="bob", parameters={"oldColumnPath": "note", "newColumnPath": "memo"}),
        commit(8, "RENAME COLUMN", plan=PLAN, kind=Kind.RENAME_COLUMN, parameters={"oldColumnPath": "x"}),
    ]
    found = undo(history)
    assert found.renames == (("cust", "customer_id"), ("amt", "amount"))
    assert found.way is Way.FORWARD  # bob's rename since


# --- features_enabled -------------------------------------------------------------------------------


def test_features_enabled_are_those_the_plan_added_to_the_protocol() -> None:
    before = table(T, col("id"), properties={"delta.feature.appendOnly": "supported", "delta.appendOnly": "false"})
    after = table(
        T,
        col("id"),
        properties={
            "delta.feature.appendOnly": "supported",
            "delta.feature.typeWidening": "supported",
            "delta.feature.columnMapping": "supported",
            "delta.columnMapping.mode": "name",
            "delta.enableTypeWidening": "true",
        },
    )
    assert features_enabled(before, after) == ["columnMapping", "typeWidening"]
    assert features_enabled(after, after) == []
    assert features_enabled(after, before) == []


# --- reverse ----------------------------------------------------------------------------------------

ID = col("id", "bigint", nullable=False)
AMOUNT = col("amount", "decimal(10,2)")


def test_a_column_the_plan_added_is_removed_and_one_others_added_is_kept() -> None:
    before = table(T, ID, AMOUNT)
    after = table(T, ID, AMOUNT, col("note"))
    current = table(T, ID, AMOUNT, col("note"), col("region"))
    want = reverse(current, before, after)
    assert want.columns == (ID, AMOUNT, col("region"))


def test_columns_the_plan_left_stay_as_others_made_them() -> None:
    before = table(T, ID, AMOUNT, col("status"))
    after = table(T, ID, AMOUNT, col("status"), col("note"))
    widened = col("amount", "decimal(12,2)", comment="money")
    current = table(T, ID, widened, col("note"))  # bob widened amount and dropped status
    assert reverse(current, before, after).columns == (ID, widened)


def test_a_column_the_plan_changed_goes_back() -> None:
    before = table(T, ID, col("status", comment="order state"))
    after = table(T, ID, col("status", comment="state of the order"))
    assert reverse(after, before, after).columns == (ID, col("status", comment="order state"))


def test_a_column_the_plan_dropped_comes_back() -> None:
    before = table(T, ID, AMOUNT)
    after = table(T, ID)
    assert reverse(after, before, after).columns == (ID, AMOUNT)


def test_only_what_the_plan_changed_in_a_column_goes_back() -> None:
    before = table(T, ID, AMOUNT)
    after = table(T, ID, col("amount", "decimal(10,2)", comment="money"))
    current = table(T, ID, col("amount", "decimal(12,2)", comment="money"))  # widened by someone else since
    assert reverse(current, before, after).columns == (ID, col("amount", "decimal(12,2)"))


def test_a_renamed_column_gets_its_old_name_back_from_its_current_one() -> None:
    before = table(T, ID, col("cust", "bigint"))
    after = table(T, ID, col("customer_id", "bigint"))
    want = reverse(after, before, after, (("cust", "customer_id"),))
    assert want.columns == (ID, col("cust", "bigint"))
    assert want.columns[1].renamed_from == "customer_id"
    assert want.columns[0].renamed_from is None


def test_renames_match_column_names_case_insensitively() -> None:
    before = table(T, ID, col("Cust", "bigint"))
    after = table(T, ID, col("customer_id", "bigint"))
    want = reverse(after, before, after, (("cust", "Customer_ID"),))
    assert [(c.name, c.renamed_from) for c in want.columns] == [("id", None), ("Cust", "customer_id")]


def test_a_rename_already_undone_gives_the_column_once() -> None:
    before = table(T, ID, col("cust", "bigint"))
    after = table(T, ID, col("customer_id", "bigint"))
    want = reverse(before, before, after, (("cust", "customer_id"),))
    assert [c.name for c in want.columns] == ["id", "cust"]


def test_the_table_comment_goes_back_only_when_the_plan_changed_it() -> None:
    before = table(T, ID, comment="one row per order")
    after = table(T, ID, comment="orders, one per row")
    current = table(T, ID, comment="orders (edited by bob)")
    assert reverse(after, before, after).comment == "one row per order"
    assert reverse(current, before, after).comment == "one row per order"
    assert reverse(current, before, before).comment == "orders (edited by bob)"
    assert reverse(table(T, ID), table(T, ID, comment="x"), table(T, ID)).comment == "x"


def test_properties_three_ways_and_managed_keys_left_out() -> None:
    before = table(
        T,
        ID,
        properties={"owner": "sales", "delta.logRetentionDuration": "interval 30 days", "gone": "soon"},
    )
    after = table(
        T,
        ID,
        properties={
            "owner": "finance",  # changed by the plan
            "delta.logRetentionDuration": "interval 30 days",
            "team": "orders",  # added by the plan
            "delta.columnMapping.mode": "name",
            "delta.columnMapping.maxColumnId": "2",
            "delta.feature.columnMapping": "supported",
            "delta.enableTypeWidening": "true",
            "delta.feature.typeWidening": "supported",
            "delta.minReaderVersion": "3",
            "delta.minWriterVersion": "7",
        },
    )
    # Since the plan, someone else added a property and changed one the plan left.
    others = {"extra": "bob", "delta.logRetentionDuration": "interval 60 days"}
    current = table(T, ID, properties={**after.property_map, **others})
    want = reverse(current, before, after)
    assert want.properties == (
        ("delta.logRetentionDuration", "interval 60 days"),
        ("extra", "bob"),
        ("gone", "soon"),  # removed by the plan: back
        ("owner", "sales"),
    )
    assert want.removed_properties == ("team",)


def test_a_property_the_plan_added_and_someone_removed_is_still_listed() -> None:
    before, after = table(T, ID), table(T, ID, properties={"team": "orders"})
    want = reverse(table(T, ID), before, after)
    assert want.properties == ()
    assert want.removed_properties == ("team",)


def test_managed_keys_the_plan_changed_are_neither_restored_nor_removed() -> None:
    before = table(T, ID, properties={"delta.enableTypeWidening": "false"})
    after = table(T, ID, properties={"delta.enableTypeWidening": "true", "delta.feature.typeWidening": "supported"})
    want = reverse(after, before, after)
    assert want.properties == ()
    assert want.removed_properties == ()


def test_checks_three_ways() -> None:
    before = table(T, ID, AMOUNT, checks={"known": "id > 0", "gone": "amount < 1000000", "changed": "amount >= 0"})
    after = table(T, ID, AMOUNT, checks={"known": "id > 0", "positive": "amount > 0", "changed": "amount > 0"})
    current = table(
        T,
        ID,
        AMOUNT,
        checks={
            "known": "id > 0 AND id < 9999999",
            "positive": "amount > 0",
            "changed": "amount > 0",
            "bobs": "id < 5",
        },
    )
    want = reverse(current, before, after)
    assert want.checks == (
        Check("bobs", "id < 5"),  # added by someone else: kept
        Check("changed", "amount >= 0"),  # changed by the plan: back
        Check("gone", "amount < 1000000"),  # dropped by the plan: back
        Check("known", "id > 0 AND id < 9999999"),  # changed by someone else: kept
    )  # `positive`, added by the plan: gone


def test_reverse_keeps_what_the_table_is_and_drops_the_spec_side() -> None:
    before = table(T, ID, partitioned_by=["id"])
    after = table(T, ID, partitioned_by=["id"])
    current = dataclasses.replace(table(T, ID, partitioned_by=["id"]), num_files=7, version=12, clustered_by=("id",))
    want = reverse(current, before, after)
    assert want.name == T
    assert want.num_files == 7
    assert want.version == 12
    assert want.partitioned_by == ("id",)
    assert want.clustered_by == ("id",)  # clustered by someone else since
    assert want.origin is None
    assert reverse(current, before, dataclasses.replace(after, clustered_by=("id",))).clustered_by == ()


# --- reverse through the planner --------------------------------------------------------------------


def ordered(*actions: Action) -> list[Action]:
    return sorted(actions, key=sort_key)


def backwards(current: Table, before: Table, after: Table, renames: tuple[tuple[str, str], ...] = ()) -> Plan:
    return make_plan(state(current), state(reverse(current, before, after, renames)))


MAPPED = {"delta.columnMapping.mode": "name", "delta.feature.columnMapping": "supported"}


def test_the_planner_reverses_what_the_plan_did_and_keeps_what_others_did() -> None:
    before = table(
        T,
        ID,
        AMOUNT,
        col("status", comment="order state"),
        comment="one row per order",
        checks={"known": "id > 0"},
        properties={"owner": "sales"},
    )
    after = table(
        T,
        ID,
        AMOUNT,
        col("status", comment="state of the order"),
        col("note"),
        comment="orders",
        checks={"known": "id > 0", "positive": "amount > 0"},
        properties={"owner": "finance", "team": "orders", **MAPPED},
    )
    current = table(
        T,
        ID,
        AMOUNT,
        col("status", comment="state of the order"),
        col("note"),
        col("region"),
        comment="orders",
        checks={"known": "id > 0", "positive": "amount > 0", "bobs": "id < 5"},
        properties={"owner": "finance", "team": "orders", "extra": "bob", **MAPPED},
    )
    planned = backwards(current, before, after)
    assert list(planned.actions) == ordered(
        DropCheck(T, Check("positive", "amount > 0")),
        DropColumns(T, (col("note"),)),
        SetColumnComment(T, "status", "state of the order", "order state"),
        SetProperties(
            T,
            (PropertyChange("owner", "finance", "sales"), PropertyChange("comment", "orders", "one row per order")),
        ),
        UnsetProperties(T, (("team", "orders"),)),
    )


def test_the_planner_renames_a_column_back() -> None:
    before = table(T, ID, col("cust", "bigint"), properties=MAPPED)
    after = table(T, ID, col("customer_id", "bigint"), properties=MAPPED)
    assert backwards(after, before, after, (("cust", "customer_id"),)).actions == (
        RenameColumn(T, "customer_id", "cust"),
    )


def test_the_planner_adds_back_what_the_plan_removed() -> None:
    before = table(T, ID, AMOUNT, checks={"positive": "amount > 0"}, properties={"owner": "sales"})
    after = table(T, ID, properties=MAPPED)
    planned = backwards(after, before, after)
    assert list(planned.actions) == ordered(
        AddColumns(T, (AMOUNT,)),
        AddCheck(T, Check("positive", "amount > 0")),
        SetProperties(T, (PropertyChange("owner", None, "sales"),)),
    )


def test_the_planner_leaves_a_table_as_it_was_before_the_plan_alone() -> None:
    before = table(
        T,
        ID,
        AMOUNT,
        col("status", comment="order state"),
        comment="one row per order",
        checks={"known": "id > 0"},
        properties={"owner": "sales", "gone": "soon", "delta.feature.appendOnly": "supported"},
    )
    after = table(
        T,
        ID,
        col("status", comment="state of the order"),
        col("note"),
        comment="orders",
        checks={"known": "id > 0 AND id < 9", "positive": "amount > 0"},
        properties={"owner": "finance", "team": "orders", "delta.feature.appendOnly": "supported", **MAPPED},
    )
    planned = backwards(before, before, after)
    assert planned.is_empty
    assert planned.actions == ()
    # Also when nothing happened at all.
    assert backwards(before, before, before).actions == ()


# --- the rollback's actions: SQL --------------------------------------------------------------------


def test_rollback_statements() -> None:
    assert ddl.to_sql(RestoreTable(T, 4, PLAN, (5, 6))) == ("RESTORE TABLE `shop`.`orders` TO VERSION AS OF 4",)
    assert ddl.to_sql(DropTable(T, PLAN, ("version 3 (WRITE by bob)",))) == ("DROP TABLE `shop`.`orders`",)
    assert ddl.to_sql(DropFeature(T, "typeWidening", "plan x enabled it")) == (
        "ALTER TABLE `shop`.`orders` DROP FEATURE `typeWidening`",
    )
    other = TableName("main", "my schema", "t`x")
    assert ddl.to_sql(RestoreTable(other, 0, PLAN, (1,))) == (
        "RESTORE TABLE `main`.`my schema`.`t``x` TO VERSION AS OF 0",
    )
    assert ddl.to_sql(DropTable(other, PLAN)) == ("DROP TABLE `main`.`my schema`.`t``x`",)


def test_counted_drop_columns_is_the_same_statement() -> None:
    counted = DropColumns(T, (col("note"), col("region")), values=3, written_by=("version 8 (WRITE)",))
    assert ddl.to_sql(counted) == ("ALTER TABLE `shop`.`orders` DROP COLUMNS (`note`, `region`)",)


def test_rollback_actions_order_and_subjects() -> None:
    restore = RestoreTable(T, 4, PLAN, (5,))
    notice = Notice(T, "", "why")
    feature = DropFeature(T, "typeWidening", "r")
    drop = DropTable(name("shop.a"), PLAN)
    assert ordered(feature, restore, notice, drop) == [drop, notice, restore, feature]
    assert restore.phase is Phase.REWRITE
    assert drop.phase is Phase.REWRITE
    assert feature.phase is Phase.DROP_FEATURE
    assert max(p for p in Phase if p < Phase.BREAKS_VIEW) is Phase.DROP_FEATURE
    assert subject(feature) == "typeWidening"
    assert subject(restore) == subject(drop) == ""


# --- hazards ----------------------------------------------------------------------------------------


def findings(action: Action) -> list[tuple[Hazard, str]]:
    current = state(table(T, ID, col("note"), col("region")))
    return [(f.hazard, f.reason) for f in hazard_rules.find(Plan((action,), (T,)), current)]


def test_dropping_a_table_nobody_else_wrote_is_no_hazard() -> None:
    action = DropTable(T, PLAN)
    assert findings(action) == []
    assessment = hazard_policy.assess(Plan((action,), (T,)), state(), [], [])
    assert assessment.blocks == ()


def test_dropping_a_table_others_wrote_is_destructive() -> None:
    action = DropTable(T, PLAN, ("version 3 (WRITE by bob)", "version 5 (MERGE)"))
    reason = (
        f"dropping the table discards the rows others wrote since plan {PLAN} created it "
        "(version 3 (WRITE by bob), version 5 (MERGE))"
    )
    assert findings(action) == [(Hazard.DESTRUCTIVE, reason)]
    plan = Plan((action,), (T,))
    [block] = hazard_policy.assess(plan, state(), [], []).blocks
    assert (block.finding.table, block.why, block.unblock) == (T, reason, "allow it with --allow destructive")
    assert hazard_policy.assess(plan, state(), [], [Hazard.DESTRUCTIVE]).blocks == ()


def test_dropping_a_feature_is_irreversible() -> None:
    action = DropFeature(T, "typeWidening", f"plan {PLAN} enabled it")
    reason = f"DROP FEATURE typeWidening: plan {PLAN} enabled it"
    assert findings(action) == [(Hazard.IRREVERSIBLE, reason)]
    plan = Plan((action,), (T,))
    assert [b.finding.hazard for b in hazard_policy.assess(plan, state(), [], [Hazard.DESTRUCTIVE]).blocks] == [
        Hazard.IRREVERSIBLE
    ]
    assert hazard_policy.assess(plan, state(), [], [Hazard.IRREVERSIBLE]).blocks == ()


def test_restoring_is_no_hazard() -> None:
    assert findings(RestoreTable(T, 4, PLAN, (5, 6), ("- column note string",))) == []


def test_dropping_columns_counted_empty_only_breaks_readers() -> None:
    action = DropColumns(T, (col("note"), col("region")), values=0)
    assert findings(action) == [(Hazard.BREAKING, "readers and streams that select `note`, `region` break")]


@pytest.mark.parametrize(
    ("values", "written_by", "lost"),
    [
        (
            2,
            ("version 8 (WRITE by bob)",),
            "loses the values of 2 rows written since the plan by version 8 (WRITE by bob)",
        ),
        (
            1,
            ("version 8 (WRITE)", "version 9 (MERGE)"),
            "loses the values of 1 row written since the plan by version 8 (WRITE), version 9 (MERGE)",
        ),
        (5, (), "loses the values of 5 rows"),
        (None, (), "makes its data unreachable (only time travel keeps it)"),
    ],
)
def test_dropping_columns_that_hold_values_is_destructive(
    values: int | None, written_by: tuple[str, ...], lost: str
) -> None:
    action = DropColumns(T, (col("note"),), values=values, written_by=written_by)
    assert findings(action) == [
        (Hazard.DESTRUCTIVE, f"dropping `note` {lost}"),
        (Hazard.BREAKING, "readers and streams that select `note` break"),
    ]
    blocked = hazard_policy.assess(Plan((action,), (T,)), state(), [], [Hazard.BREAKING]).blocks
    assert [b.finding.hazard for b in blocked] == [Hazard.DESTRUCTIVE]


# --- rendering --------------------------------------------------------------------------------------


def test_action_lines_of_the_rollback_actions() -> None:
    restore = RestoreTable(T, 4, PLAN, (5, 6, 7), ("- column note string", "- check positive: amount > 0"))
    assert action_lines(restore) == [
        f"~ restore to version 4 (undoes versions 5-7, plan {PLAN})",
        "- column note string",
        "- check positive: amount > 0",
    ]
    assert action_lines(RestoreTable(T, 4, PLAN, (5,))) == [f"~ restore to version 4 (undoes version 5, plan {PLAN})"]
    assert action_lines(RestoreTable(T, 4, PLAN, (5, 7, 8))) == [
        f"~ restore to version 4 (undoes versions 5, 7, 8, plan {PLAN})"
    ]
    assert action_lines(DropTable(T, PLAN, ("version 3 (WRITE)",))) == [f"- drop the table (plan {PLAN} created it)"]
    assert action_lines(DropFeature(T, "typeWidening", f"plan {PLAN} enabled it")) == [
        f"- drop feature typeWidening (plan {PLAN} enabled it)"
    ]
    counted = DropColumns(T, (col("note"),), values=3, written_by=("version 8 (WRITE)",))
    assert action_lines(counted) == ["- column note string"]


def rollback_plan() -> tuple[Plan, Assessment]:
    restored, dropped, kept = name("shop.orders"), name("shop.audit"), name("shop.items")
    actions: tuple[Action, ...] = (
        DropTable(dropped, PLAN, ("version 1 (WRITE by bob)",)),
        Notice(kept, "feature typeWidening", "the table keeps the typeWidening feature"),
        RestoreTable(restored, 3, PLAN, (4, 5), ("- column note string",)),
        Notice(restored, "", f"nobody wrote the table since plan {PLAN}"),
        DropFeature(restored, "typeWidening", f"plan {PLAN} enabled it"),
    )
    plan = Plan(tuple(sorted(actions, key=sort_key)), (dropped, kept, restored))
    current = state(table(restored, ID), table(dropped, ID), table(kept, ID))
    return plan, hazard_policy.assess(plan, current, [], [Hazard.IRREVERSIBLE])


def test_render_text_of_a_rollback() -> None:
    plan, assessment = rollback_plan()
    lines = [line.rstrip() for line in render.plain_text(render.render_text(plan, assessment)).splitlines()]
    assert lines == [
        "! blocked shop.audit",
        f"    - drop the table (plan {PLAN} created it)",
        f"      ! blocked (destructive): dropping the table discards the rows others wrote since plan {PLAN} "
        "created it (version 1 (WRITE by bob))",
        "        -> allow it with --allow destructive",
        "# shop.items: no changes",
        "    # the table keeps the typeWidening feature",
        "~ restore table shop.orders",
        f"    # nobody wrote the table since plan {PLAN}",
        f"    ~ restore to version 3 (undoes versions 4-5, plan {PLAN})",
        "        - column note string",
        f"    - drop feature typeWidening (plan {PLAN} enabled it)",
        f"      ⚠ irreversible (allowed): DROP FEATURE typeWidening: plan {PLAN} enabled it",
        "Plan: 0 to create, 1 to change, 1 unchanged, 1 blocked. To allow: --allow destructive.",
    ]


def test_a_table_dropped_with_nobody_elses_rows_is_a_drop_table_header() -> None:
    plan = Plan((DropTable(T, PLAN),), (T,))
    text = render.plain_text(render.render_text(plan, hazard_policy.assess(plan, state(table(T, ID)), [], [])))
    assert text.splitlines()[:2] == ["- drop table shop.orders", f"    - drop the table (plan {PLAN} created it)"]


def test_plan_json_of_the_rollback_actions() -> None:
    plan, assessment = rollback_plan()
    data = plan_json(plan, assessment)
    assert json.loads(json.dumps(data)) == data
    by_kind = {a["kind"]: a for a in data["actions"] if a["kind"] != "Notice"}
    assert by_kind["DropTable"] == {
        "kind": "DropTable",
        "table": "shop.audit",
        "plan_id": PLAN,
        "written_by": ["version 1 (WRITE by bob)"],
        "sql": ["DROP TABLE `shop`.`audit`"],
        "hazards": [
            {
                "class": "destructive",
                "reason": f"dropping the table discards the rows others wrote since plan {PLAN} created it "
                "(version 1 (WRITE by bob))",
                "blocked": True,
                "why": f"dropping the table discards the rows others wrote since plan {PLAN} created it "
                "(version 1 (WRITE by bob))",
                "unblock": "allow it with --allow destructive",
            }
        ],
    }
    assert by_kind["RestoreTable"] == {
        "kind": "RestoreTable",
        "table": "shop.orders",
        "version": 3,
        "plan_id": PLAN,
        "undoes": [4, 5],
        "changes": ["- column note string"],
        "sql": ["RESTORE TABLE `shop`.`orders` TO VERSION AS OF 3"],
        "hazards": [],
    }
    assert by_kind["DropFeature"] == {
        "kind": "DropFeature",
        "table": "shop.orders",
        "feature": "typeWidening",
        "reason": f"plan {PLAN} enabled it",
        "sql": ["ALTER TABLE `shop`.`orders` DROP FEATURE `typeWidening`"],
        "hazards": [
            {"class": "irreversible", "reason": f"DROP FEATURE typeWidening: plan {PLAN} enabled it", "blocked": False}
        ],
    }
    assert data["summary"] == {"create": 0, "change": 1, "unchanged": 1, "blocked": 1, "drop": 0}


def test_render_sql_of_a_rollback_comments_out_the_blocked_drop() -> None:
    plan, assessment = rollback_plan()
    sql = render_sql(plan, assessment, ROLLBACK)
    assert "-- DROP TABLE `shop`.`audit`;" in sql
    assert "\nRESTORE TABLE `shop`.`orders` TO VERSION AS OF 3;\n" in sql
    assert "\nALTER TABLE `shop`.`orders` DROP FEATURE `typeWidening`;\n" in sql


# --- plan files -------------------------------------------------------------------------------------

ROUND_TRIP: list[Action] = [
    RestoreTable(T, 4, PLAN, (5, 6, 7), ("- column note string", '~ comment: "a" -> "b"')),
    RestoreTable(TableName("main", "shop", "orders"), 0, PLAN, (1,)),
    DropTable(T, PLAN),
    DropTable(T, PLAN, ("version 3 (WRITE by bob)", "version 5 (MERGE)")),
    DropFeature(T, "typeWidening", f"plan {PLAN} enabled it"),
    DropColumns(T, (col("note"), col("region", "int", nullable=False, comment="r"))),
    DropColumns(T, (col("note"),), values=0),
    DropColumns(T, (col("note"),), values=12, written_by=("version 8 (WRITE by bob)",)),
]


@pytest.mark.parametrize("action", ROUND_TRIP, ids=lambda a: type(a).__name__)
def test_plan_file_round_trip(action: Action) -> None:
    data = json.loads(json.dumps(plancodec.encode(action)))
    assert data["kind"] == type(action).__name__
    back = plancodec.decode_action(data)
    assert back == action
    assert type(back) is type(action)
    assert ddl.to_sql(back) == ddl.to_sql(action)


def test_plan_file_fields_of_the_rollback_actions() -> None:
    assert plancodec.encode(RestoreTable(T, 4, PLAN, (5, 6), ("x",))) == {
        "kind": "RestoreTable",
        "name": {"catalog": None, "schema": "shop", "name": "orders"},
        "version": 4,
        "plan_id": PLAN,
        "undoes": [5, 6],
        "changes": ["x"],
    }
    counted = plancodec.encode(DropColumns(T, (col("note"),), values=2, written_by=("v",)))
    assert (counted["values"], counted["written_by"]) == (2, ["v"])


@pytest.mark.parametrize(
    ("data", "error"),
    [
        (
            {"kind": "RestoreTable", "name": {"catalog": None, "schema": "s", "name": "t"}, "version": 4, "undoes": []},
            "missing field `plan_id`",
        ),
        (
            {"kind": "DropTable", "name": {"catalog": None, "schema": "s", "name": "t"}, "plan_id": "p", "rows": 3},
            "unknown field `rows`",
        ),
        (
            {
                "kind": "RestoreTable",
                "name": {"catalog": None, "schema": "s", "name": "t"},
                "version": "4",
                "plan_id": "p",
                "undoes": [],
            },
            "expected an integer",
        ),
        (
            {
                "kind": "DropColumns",
                "name": {"catalog": None, "schema": "s", "name": "t"},
                "columns": [],
                "values": True,
            },
            "expected an integer",
        ),
        (
            {"kind": "DropFeature", "name": {"catalog": None, "schema": "s", "name": "t"}, "feature": "x"},
            "missing field `reason`",
        ),
    ],
)
def test_plan_file_decoding_of_the_rollback_actions_is_strict(data: dict[str, Any], error: str) -> None:
    with pytest.raises(plancodec.DecodeError, match=error):
        plancodec.decode_action(data)

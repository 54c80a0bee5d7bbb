"""The walking skeleton on real Spark + Delta: create, evolve, converge, and fail cleanly."""

from __future__ import annotations

import pytest

from delta_sync.model.errors import ExecutionError, UnsafePlanError
from delta_sync.model.state import TableName
from delta_sync.planning.actions import (
    TABLE_COMMENT_KEY,
    AddCheck,
    AddColumns,
    CreateSchema,
    CreateTable,
    SetColumnComment,
    SetProperties,
    Unsupported,
)
from delta_sync.review import execution
from delta_sync.review.outcomes import DataBlockedError

from .conftest import Project


def orders_spec(schema: str, extra_columns: str = "", checks: str = "", comment: str = "Orders") -> str:
    return f"""\
        table: {schema}.orders
        comment: {comment}
        columns:
          - name: order_id
            type: long
            nullable: false
            comment: Surrogate key
          - name: status
            type: string
          - name: amount
            type: decimal(18, 2)
          - name: address
            type: "struct<street: string, city:string>"
          - name: tags
            type: array<string>
          - name: attrs
            type: map<string,integer>
          - name: country
            type: char(2)
          - name: order_date
            type: date
        {extra_columns}
        checks:
          amount_non_negative: amount >= 0
        {checks}
        partitioned_by: [order_date]
        properties:
          delta.enableChangeDataFeed: "true"
          team: sales
        """


def kinds(plan: object) -> list[str]:
    return [type(a).__name__ for a in plan.actions]  # type: ignore[attr-defined]


def test_create_converges_and_replan_is_empty(project: Project, schema: str) -> None:
    project.write("orders.yaml", orders_spec(schema))
    plan = project.apply()
    assert kinds(plan) == ["CreateSchema", "CreateTable", "AddCheck"]
    assert project.plan().is_empty

    detail = project.sql(f"DESCRIBE DETAIL {schema}.orders")[0]
    assert detail[0] == "delta"
    state = project.catalog.read([TableName(None, schema, "orders")]).tables[TableName(None, schema, "orders")]
    assert [(c.name, c.type, c.nullable) for c in state.columns] == [
        ("order_id", "bigint", False),
        ("status", "string", True),
        ("amount", "decimal(18,2)", True),
        ("address", "struct<street:string,city:string>", True),
        ("tags", "array<string>", True),
        ("attrs", "map<string,int>", True),
        ("country", "char(2)", True),
        ("order_date", "date", True),
    ]
    assert state.partitioned_by == ("order_date",)
    assert state.comment == "Orders"
    assert ("team", "sales") in state.properties


def test_evolve_add_column_comments_property_and_retokenised_check(project: Project, schema: str) -> None:
    project.write("orders.yaml", orders_spec(schema))
    project.apply()
    project.sql(
        f"INSERT INTO {schema}.orders (order_id, status, amount, order_date) "
        "VALUES (1, 'new', 10.50, DATE'2026-01-01'), (2, 'paid', 0, DATE'2026-01-02')"
    )
    evolved = (
        orders_spec(
            schema,
            extra_columns="""  - name: channel
            type: string
            comment: web or app""",
            checks="  status_known: concat(status, '!') != 'bogus!' AND lower(status) IN ('new','paid')",
            comment="Orders placed in the shop",
        )
        .replace("comment: Surrogate key", "comment: The order's key")
        .replace("team: sales", "team: checkout")
    )
    project.write("orders.yaml", evolved)

    plan = project.plan()
    assert {type(a) for a in plan.actions} == {AddColumns, SetColumnComment, SetProperties, AddCheck}
    # The table comment rides in the one SET TBLPROPERTIES (Delta stores 'comment' as the description).
    (properties,) = (a for a in plan.actions if isinstance(a, SetProperties))
    assert {c.key: c.after for c in properties.changes} == {
        "team": "checkout",
        TABLE_COMMENT_KEY: "Orders placed in the shop",
    }
    project.apply()
    # Delta stored the new check re-tokenised; the comparison must see through that.
    stored = project.properties(f"{schema}.orders")
    assert (
        stored["delta.constraints.status_known"]
        != "concat(status, '!') != 'bogus!' AND lower(status) IN ('new','paid')"
    )
    assert project.plan().is_empty
    assert project.sql(f"SELECT count(*), sum(order_id) FROM {schema}.orders") == [(2, 3)]


def test_odd_strings_round_trip_exactly(project: Project, schema: str) -> None:
    # `$${...}` writes a literal `${...}` (an undeclared `${x}` is an error of the spec).
    odd = "it's a `tick`, a back\\\\slash, $${x}, ${env:HOME}, naïve 数据\\nsecond line"
    project.write(
        "odd.yaml",
        f"""\
        table: {schema}.odd
        comment: "{odd}"
        columns:
          - name: "it's`odd"
            type: string
            comment: "{odd}"
          - name: plain
            type: int
        properties:
          note: "{odd}"
        """,
    )
    project.apply()
    assert project.plan().is_empty
    name = TableName(None, schema, "odd")
    state = project.catalog.read([name]).tables[name]
    expected = "it's a `tick`, a back\\slash, ${x}, ${env:HOME}, naïve 数据\nsecond line"
    assert state.comment == expected
    assert state.columns[0].name == "it's`odd"
    assert state.columns[0].comment == expected
    assert dict(state.properties)["note"] == expected


def test_violated_check_stops_apply_and_rerun_converges(project: Project, schema: str) -> None:
    project.write("orders.yaml", orders_spec(schema))
    project.apply()
    project.sql(
        f"INSERT INTO {schema}.orders (order_id, status, amount, order_date) VALUES "
        "(1, 'new', 1, DATE'2026-01-01'), (2, 'bad', 2, DATE'2026-01-01'), (3, 'bad', 3, DATE'2026-01-02')"
    )
    project.write(
        "orders.yaml",
        orders_spec(schema, checks="  status_ok: status <> 'bad'").replace("team: sales", "team: ops"),
    )
    plan = project.plan()
    # The new rule reads columns the plan leaves alone: its ADD CONSTRAINT goes first.
    assert kinds(plan) == ["AddCheck", "SetProperties"]

    # The data blocks it (exit 3), as a probe would have said: Delta's count and the violating rows.
    with pytest.raises(DataBlockedError) as failure:
        execution.apply_plan(project.catalog, plan)
    message = str(failure.value)
    assert failure.value.exit_code == 3
    assert f"blocked by the data: 2 existing rows of {schema}.orders violate `status_ok`" in message
    assert "violating rows (2 shown):" in message
    assert "'bad'" in message
    assert "nothing was applied" in message
    assert "not applied: 2 statement(s)" in message
    assert "Traceback" not in message
    assert "at org.apache" not in message

    # Delta refused the constraint and nothing else ran: the whole plan is still to do.
    left = project.plan()
    assert kinds(left) == ["AddCheck", "SetProperties"]
    project.sql(f"UPDATE {schema}.orders SET status = 'new' WHERE status = 'bad'")
    project.apply()
    assert project.plan().is_empty
    assert project.sql(f"SELECT count(*) FROM {schema}.orders") == [(3,)]


def test_changed_and_removed_checks(project: Project, schema: str) -> None:
    project.write("orders.yaml", orders_spec(schema, checks="  small: amount < 1000"))
    project.apply()
    project.write("orders.yaml", orders_spec(schema).replace("amount >= 0", "amount >= -1"))
    plan = project.plan()
    assert kinds(plan) == ["DropCheck", "DropCheck", "AddCheck"]
    project.apply()
    assert project.plan().is_empty
    stored = project.properties(f"{schema}.orders")
    assert "delta.constraints.small" not in stored
    assert stored["delta.constraints.amount_non_negative"] == "amount >= - 1"


def test_blocked_changes_apply_nothing(project: Project, schema: str) -> None:
    project.write("orders.yaml", orders_spec(schema))
    project.apply()
    project.write(
        "orders.yaml",
        # decimal -> array: no CAST converts it, so it is blocked (one a CAST converts would be a rewrite).
        orders_spec(schema).replace("type: decimal(18, 2)", "type: array<string>").replace("team: sales", "team: x"),
    )
    plan = project.plan()
    assert [type(a) for a in plan.blocked] == [Unsupported]
    assert "amount" in plan.blocked[0].reason
    before = project.sql(f"DESCRIBE HISTORY {schema}.orders")
    with pytest.raises(UnsafePlanError):
        execution.apply_plan(project.catalog, plan)
    assert len(project.sql(f"DESCRIBE HISTORY {schema}.orders")) == len(before)


def test_engine_rejection_is_worded_not_a_traceback(project: Project, schema: str) -> None:
    project.write(
        "spaces.yaml",
        f"""\
        table: {schema}.spaces
        columns:
          - name: id
            type: int
        properties:
          delta.noSuchSetting: "true"
        """,
    )
    with pytest.raises(ExecutionError) as failure:
        project.apply()
    message = str(failure.value)
    assert "DELTA_UNKNOWN_CONFIGURATION" in message
    assert "statement 2 of 2" in message
    assert "Traceback" not in message


def test_schema_created_only_when_missing(project: Project, schema: str) -> None:
    project.sql(f"CREATE SCHEMA {schema}")
    project.write("orders.yaml", orders_spec(schema))
    assert CreateSchema not in {type(a) for a in project.plan().actions}
    assert CreateTable in {type(a) for a in project.plan().actions}

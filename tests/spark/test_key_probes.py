"""Keys checked against real Delta rows (SparkCatalog.probe_keys): repeated key values and NULL key parts,
orphan foreign keys, a parent the plan creates (read as empty), composite keys and odd column names, all keys
of a table in one scan, and CHECK samples that lead with the primary key."""

from __future__ import annotations

import re

import pytest

from delta_sync.model.catalog import ProbeResult
from delta_sync.model.errors import CatalogError
from delta_sync.model.state import Check, Column, ForeignKey, PrimaryKey, Table, TableName
from delta_sync.planning import key_checks as keyprobe
from delta_sync.spark.catalog import SparkCatalog

from .conftest import Project

pytestmark = pytest.mark.spark


def name(schema: str, table: str) -> TableName:
    return TableName(None, schema, table)


def found(results: list[ProbeResult]) -> list[tuple[str, int | None, list[list[tuple[str, str]]]]]:
    return [(r.check, r.violations, [list(row) for row in r.samples]) for r in results]


def table(project: Project, schema: str, table: str, columns: str, rows: str, mapped: bool = False) -> TableName:
    """A Delta table with rows; `mapped`: with column mapping, which names with spaces need."""
    mapping = " TBLPROPERTIES ('delta.columnMapping.mode' = 'name')" if mapped else ""
    project.sql(f"CREATE SCHEMA IF NOT EXISTS {schema}")
    project.sql(f"CREATE TABLE {schema}.{table} ({columns}) USING DELTA{mapping}")
    project.sql(f"INSERT INTO {schema}.{table} VALUES {rows}")
    return name(schema, table)


def test_repeated_key_values_and_null_key_rows_are_counted_with_samples(
    project: Project, schema: str, catalog: SparkCatalog
) -> None:
    orders = table(
        project, schema, "orders", "order_id BIGINT, note STRING",
        "(1, 'a'), (2, 'b'), (2, 'c'), (3, 'd'), (3, 'e'), (3, 'f'), (4, 'g'), (NULL, 'h'), (NULL, 'i'), (5, 'j')",
    )  # fmt: skip
    key = PrimaryKey("pk_orders", ("order_id",))

    results = catalog.probe_keys(orders, orders.sql(), [(key, None)])

    # Two repeated values (2 and 3) plus two rows with a NULL key; most rows first, then the greater value.
    assert found(results) == [
        (
            "pk_orders",
            4,
            [
                [("order_id", "3"), ("rows", "3")],
                [("order_id", "2"), ("rows", "2")],
                [("order_id", "NULL"), ("rows", "2")],
            ],
        )
    ]


def test_samples_are_the_five_values_with_most_rows(project: Project, schema: str, catalog: SparkCatalog) -> None:
    rows = ", ".join(f"({v})" for v in [1, 1, 2, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 6, 6, 7, 7, 8])
    orders = table(project, schema, "orders", "order_id INT", rows)
    key = PrimaryKey("pk_orders", ("order_id",))

    (result,) = catalog.probe_keys(orders, orders.sql(), [(key, None)])

    assert result.violations == 7
    assert [dict(row) for row in result.samples] == [
        {"order_id": "6", "rows": "4"},
        {"order_id": "2", "rows": "3"},
        {"order_id": "7", "rows": "2"},
        {"order_id": "5", "rows": "2"},
        {"order_id": "4", "rows": "2"},
    ]


def test_a_key_that_holds_has_no_violations_and_no_samples(
    project: Project, schema: str, catalog: SparkCatalog
) -> None:
    orders = table(project, schema, "orders", "order_id BIGINT", "(1), (2), (3)")
    key = PrimaryKey("pk_orders", ("order_id",))
    assert found(catalog.probe_keys(orders, orders.sql(), [(key, None)])) == [("pk_orders", 0, [])]


def test_composite_key_with_odd_column_names(project: Project, schema: str, catalog: SparkCatalog) -> None:
    lines = table(
        project, schema, "lines", "`Order-ID` BIGINT, `li``ne` INT, qty INT",
        "(1, 1, 5), (1, 2, 5), (1, 2, 6), (2, NULL, 1), (NULL, 1, 1), (3, 1, 1), (1, 1, 7), (1, 1, 8)",
    )  # fmt: skip
    # Declared in another case than the table's: Spark's names are case-insensitive.
    key = PrimaryKey("pk_lines", ("order-id", "li`ne"))

    results = catalog.probe_keys(lines, lines.sql(), [(key, None)])

    # (1, 1) three times and (1, 2) twice: 2 repeated values; 2 rows with a NULL part.
    assert found(results) == [
        (
            "pk_lines",
            4,
            [
                [("order-id", "1"), ("li`ne", "1"), ("rows", "3")],
                [("order-id", "1"), ("li`ne", "2"), ("rows", "2")],
                [("order-id", "2"), ("li`ne", "NULL"), ("rows", "1")],
                [("order-id", "NULL"), ("li`ne", "1"), ("rows", "1")],
            ],
        )
    ]


def test_orphan_foreign_keys_are_counted_with_samples(project: Project, schema: str, catalog: SparkCatalog) -> None:
    # A parent key held twice must not count a child row twice.
    orders = table(project, schema, "orders", "id BIGINT, note STRING", "(1, 'a'), (2, 'b'), (2, 'c')")
    lines = table(
        project, schema, "lines", "order_id BIGINT, line_no INT",
        "(1, 1), (1, 2), (2, 1), (9, 1), (9, 2), (9, 3), (8, 1), (NULL, 1)",
    )  # fmt: skip
    key = ForeignKey("fk_lines_orders", ("order_id",), orders, ("id",))

    results = catalog.probe_keys(lines, lines.sql(), [(key, orders.sql())])

    # 9 (3 rows) and 8 (1 row) have no order; the NULL key is no reference at all.
    assert found(results) == [
        ("fk_lines_orders", 4, [[("order_id", "9"), ("rows", "3")], [("order_id", "8"), ("rows", "1")]])
    ]


def test_a_parent_created_in_the_same_plan_is_empty(project: Project, schema: str, catalog: SparkCatalog) -> None:
    lines = table(
        project, schema, "lines", "order_id BIGINT, `odd name` STRING",
        "(1, 'x'), (1, 'y'), (2, 'x'), (NULL, 'z'), (3, NULL)", mapped=True,
    )  # fmt: skip
    parent = Table(name(schema, "orders"), (Column("id", "bigint"), Column("odd name", "string")))
    simple = ForeignKey("fk_simple", ("order_id",), parent.name, ("id",))
    composite = ForeignKey("fk_composite", ("order_id", "odd name"), parent.name, ("id", "odd name"))
    empty = keyprobe.empty_relation(parent)

    results = catalog.probe_keys(lines, lines.sql(), [(simple, empty), (composite, empty)])

    # Every fully non-NULL key is an orphan: 4 rows for the one-column key, 3 for the two-column one.
    assert [(r.check, r.violations) for r in results] == [("fk_simple", 4), ("fk_composite", 3)]
    assert [dict(row) for row in results[0].samples] == [
        {"order_id": "1", "rows": "2"},
        {"order_id": "3", "rows": "1"},
        {"order_id": "2", "rows": "1"},
    ]
    assert [dict(row) for row in results[1].samples] == [
        {"order_id": "2", "odd name": "'x'", "rows": "1"},
        {"order_id": "1", "odd name": "'y'", "rows": "1"},
        {"order_id": "1", "odd name": "'x'", "rows": "1"},
    ]


def scans_of(catalog: SparkCatalog, statement: str, table: TableName) -> int:
    plan = str(catalog.spark.sql(statement)._jdf.queryExecution().executedPlan().toString())
    return len([line for line in plan.splitlines() if f"FileScan parquet spark_catalog.{table}[" in line])


def test_every_key_of_a_table_is_counted_in_one_scan(project: Project, schema: str, catalog: SparkCatalog) -> None:
    orders = table(project, schema, "orders", "id BIGINT", "(1), (2), (3)")
    products = table(project, schema, "products", "sku STRING, shop INT", "('a', 1), ('b', 1), ('a', 2)")
    lines = table(
        project, schema, "lines", "order_id BIGINT, line_no INT, sku STRING, shop INT",
        "(1, 1, 'a', 1), (1, 1, 'b', 1), (1, 2, 'a', 2), (2, 1, 'zz', 1), (4, 1, 'a', 3), (4, 2, 'a', NULL), "
        "(NULL, 1, 'b', 1), (5, 6, 'b', 2)",
    )  # fmt: skip
    keys: list[tuple[PrimaryKey | ForeignKey, str | None]] = [
        (PrimaryKey("pk", ("order_id", "line_no")), None),
        (ForeignKey("fk_order", ("order_id",), orders, ("id",)), orders.sql()),
        (ForeignKey("fk_product", ("sku", "shop"), products, ("sku", "shop")), products.sql()),
        # One column of the primary key alone: a grouping set of its own.
        (ForeignKey("fk_self", ("line_no",), lines, ("order_id",)), lines.sql()),
    ]

    together = catalog.probe_keys(lines, lines.sql(), keys)
    alone = [r for key in keys for r in catalog.probe_keys(lines, lines.sql(), [key])]

    # pk: (1, 1) twice + 1 NULL row; fk_order: 4 twice, 5 once; fk_product: (zz, 1), (a, 3), (b, 2);
    # fk_self: line_no 6 is no order_id of lines.
    assert [(r.check, r.violations) for r in together] == [
        ("pk", 2),
        ("fk_order", 3),
        ("fk_product", 3),
        ("fk_self", 1),
    ]
    assert together == alone
    assert scans_of(catalog, keyprobe.scan_sql(lines.sql(), keys[:3]), lines) == 1


def test_a_check_sample_leads_with_the_primary_key(project: Project, schema: str, catalog: SparkCatalog) -> None:
    orders = table(
        project, schema, "orders", "note STRING, amount INT, region STRING NOT NULL, order_id BIGINT",
        "('a', -1, 'eu', 7), ('b', 5, 'us', 8)",
    )  # fmt: skip
    rule = Check("positive", "amount > 0")

    guessed = catalog.probe(orders, [rule], orders.sql())
    keyed = catalog.probe(orders, [rule], orders.sql(), primary_key=PrimaryKey("pk", ("Order_ID", "region")))

    # Without a key: the NOT NULL column stands for it, in table order; with one: its columns first.
    assert [list(row) for row in guessed[0].samples] == [[("amount", "-1"), ("region", "'eu'")]]
    assert [list(row) for row in keyed[0].samples] == [[("order_id", "7"), ("region", "'eu'"), ("amount", "-1")]]


def test_an_engine_error_is_one_sentence_naming_the_table_and_key(
    project: Project, schema: str, catalog: SparkCatalog
) -> None:
    orders = table(project, schema, "orders", "order_id BIGINT", "(1)")
    key = PrimaryKey("pk_orders", ("missing",), origin=None)

    with pytest.raises(CatalogError) as raised:
        catalog.probe_keys(orders, orders.sql(), [(key, None)])

    message = str(raised.value)
    assert message.startswith(f"Could not check the data of {orders} against the key(s) `pk_orders`: ")
    assert "missing" in message
    assert "\n" not in message
    assert not re.search(r"Traceback|at org\.apache", message)

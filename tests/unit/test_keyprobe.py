"""The SQL that checks keys against the data (delta_sync.planning.key_checks), and CHECK samples that lead with the
primary key (probe_queries.sample_columns). What the SQL counts on real rows: tests/spark/test_key_probes.py."""

from __future__ import annotations

import pytest

from delta_sync.model.state import Check, Column, ForeignKey, PrimaryKey, Table, TableName
from delta_sync.planning import key_checks as keyprobe
from delta_sync.planning.probe_queries import sample_columns, sample_sql

ORDERS = TableName(None, "shop", "orders")
PK = PrimaryKey("pk_shop_orders__order_id", ("order_id",))
FK = ForeignKey("fk_lines", ("order_id",), ORDERS, ("id",))


def test_one_primary_key_is_one_group_by_and_no_join() -> None:
    broken = "((g.`order_id` IS NULL) OR g.__delta_sync_rows > 1)"
    assert keyprobe.scan_sql("rel", [(PK, None)]) == (
        "SELECT coalesce(sum(CASE WHEN (g.`order_id` IS NULL) THEN g.__delta_sync_rows "
        "WHEN g.__delta_sync_rows > 1 THEN 1 END), 0) AS k0, "
        f"max_by(CASE WHEN {broken} THEN struct(g.`order_id`, g.__delta_sync_rows) END, "
        f"CASE WHEN {broken} THEN struct(g.__delta_sync_rows, g.`order_id`) END, 5) AS s0 "
        "FROM (SELECT `order_id`, count(*) AS __delta_sync_rows FROM rel GROUP BY `order_id`) AS g"
    )


def test_a_foreign_key_joins_the_groups_with_the_parents_distinct_keys() -> None:
    broken = "g.`order_id` IS NOT NULL AND p0.__delta_sync_found IS NULL"
    assert keyprobe.scan_sql("rel", [(FK, "`shop`.`orders`")], samples=3) == (
        f"SELECT coalesce(sum(CASE WHEN {broken} THEN g.__delta_sync_rows END), 0) AS k0, "
        f"max_by(CASE WHEN {broken} THEN struct(g.`order_id`, g.__delta_sync_rows) END, "
        f"CASE WHEN {broken} THEN struct(g.__delta_sync_rows, g.`order_id`) END, 3) AS s0 "
        "FROM (SELECT `order_id`, count(*) AS __delta_sync_rows FROM rel GROUP BY `order_id`) AS g "
        "LEFT JOIN (SELECT `id`, true AS __delta_sync_found FROM `shop`.`orders` GROUP BY `id`) AS p0 "
        "ON g.`order_id` = p0.`id`"
    )


def test_keys_over_different_columns_share_one_scan_through_grouping_sets() -> None:
    pk = PrimaryKey("pk", ("order_id", "line_no"))
    by_order = ForeignKey("fk_order", ("ORDER_ID",), ORDERS, ("id",))
    by_product = ForeignKey("fk_product", ("sku",), TableName(None, "shop", "products"), ("sku",))
    same_as_pk = ForeignKey("fk_twin", ("Order_Id", "Line_No"), ORDERS, ("id", "line"))

    sql = keyprobe.scan_sql("rel", [(pk, None), (by_order, "o"), (by_product, "p"), (same_as_pk, "t")])

    # Each column once, each column list once, whatever its case; grouping_id() marks the columns left out.
    assert "FROM (SELECT `order_id`, `line_no`, `sku`, grouping_id() AS __delta_sync_set" in sql
    assert "GROUP BY GROUPING SETS ((`order_id`, `line_no`), (`ORDER_ID`), (`sku`))) AS g" in sql
    assert sql.count("FROM rel") == 1
    # One bit per column (order_id, line_no, sku), the first the highest, set for a column left out.
    assert "g.__delta_sync_set = 1 AND (g.`order_id` IS NULL OR g.`line_no` IS NULL)" in sql  # sku out: 0b001
    assert "ON g.__delta_sync_set = 3 AND g.`ORDER_ID` = p1.`id`" in sql  # line_no, sku out: 0b011
    assert "ON g.__delta_sync_set = 6 AND g.`sku` = p2.`sku`" in sql  # order_id, line_no out: 0b110
    assert "ON g.__delta_sync_set = 1 AND g.`Order_Id` = p3.`id` AND g.`Line_No` = p3.`line`" in sql
    assert [(sql.count(f" AS k{i}"), sql.count(f" AS s{i}")) for i in range(4)] == [(1, 1)] * 4


def test_odd_column_names_are_quoted_everywhere() -> None:
    odd = PrimaryKey("pk", ("order id", "we`ird"))
    fk = ForeignKey("fk", ("order id",), ORDERS, ("the id",))
    scan = keyprobe.scan_sql("rel", [(odd, None), (fk, "par")])
    assert "SELECT `order id`, `we``ird`, grouping_id()" in scan
    assert "g.`order id` IS NULL OR g.`we``ird` IS NULL" in scan
    assert "(SELECT `the id`, true AS __delta_sync_found FROM par GROUP BY `the id`)" in scan
    assert "g.`order id` = p1.`the id`" in scan
    assert "struct(g.`order id`, g.`we``ird`, g.__delta_sync_rows)" in scan
    assert "we`ird" not in scan.replace("we``ird", "")


def test_a_foreign_key_needs_its_parent() -> None:
    with pytest.raises(ValueError, match="fk_lines"):
        keyprobe.scan_sql("rel", [(FK, None)])


def test_the_empty_relation_has_the_tables_columns_and_types() -> None:
    table = Table(ORDERS, (Column("id", "bigint", nullable=False), Column("a b`c", "decimal(18,2)")))
    assert keyprobe.empty_relation(table) == (
        "(SELECT CAST(NULL AS bigint) AS `id`, CAST(NULL AS decimal(18,2)) AS `a b``c` LIMIT 0)"
    )


FIELDS = [("note", True), ("amount", True), ("region", False), ("Order_ID", False)]


def test_check_samples_lead_with_the_primary_key_then_the_rule_columns() -> None:
    rule = Check("positive", "amount > 0 AND note <> ''")
    # The key's columns in key order, spelled as the table spells them; the NOT NULL guess is not needed.
    assert sample_columns(rule, FIELDS, ("order_id",)) == ["Order_ID", "note", "amount"]
    assert sample_columns(rule, FIELDS, ("region", "order_id")) == ["region", "Order_ID", "note", "amount"]
    # A rule on a key column shows it once.
    assert sample_columns(Check("r", "region <> ''"), FIELDS, ("order_id", "region")) == ["Order_ID", "region"]
    # Without a key: the key-like columns and the rule's, in table order, as before.
    assert sample_columns(rule, FIELDS) == ["note", "amount", "region", "Order_ID"]
    assert sample_sql("t", rule, FIELDS, primary_key=("order_id",)) == (
        "SELECT `Order_ID`, `note`, `amount` FROM t WHERE NOT coalesce((amount > 0 AND note <> ''), false) LIMIT 5"
    )

"""Which columns a data check's sample rows show: the key-like ones and those the rule reads."""

from __future__ import annotations

from delta_sync.model.state import Check
from delta_sync.planning.probe_queries import sample_columns, sample_sql

FIELDS = [("order_id", False), ("customer", True), ("amount", True), ("created_at", True), ("tenant", False)]


def test_not_null_columns_and_the_columns_the_rule_reads_in_table_order() -> None:
    rule = Check("positive", "amount >= 0 OR created_at < DATE '2020-01-01'")
    assert sample_columns(rule, FIELDS) == ["order_id", "amount", "created_at", "tenant"]


def test_the_first_column_stands_for_the_key_when_no_column_is_not_null() -> None:
    nullable = [(name, True) for name, _ in FIELDS]
    assert sample_columns(Check("c", "`Customer` IS NOT NULL"), nullable) == ["order_id", "customer"]


def test_the_sample_query_selects_those_columns_quoted() -> None:
    rule = Check("positive", "amount >= 0")
    assert sample_sql("t", rule, [("my id", False), ("amount", True), ("x", True)]) == (
        "SELECT `my id`, `amount` FROM t WHERE NOT coalesce((amount >= 0), false) LIMIT 5"
    )
    assert sample_sql("t", rule).startswith("SELECT * FROM t WHERE")

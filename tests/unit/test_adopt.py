"""adopt's pure part: a spec file's text edited to describe the live table or view, only where it differs."""

from __future__ import annotations

from dataclasses import replace

import pytest

from delta_sync.model.state import Check, Column, Table, TableName, View
from delta_sync.specs.adopt import adopt_text, remaining_changes
from delta_sync.specs.fmt import format_text

NAME = TableName(None, "shop", "orders")

SPEC = """\
# Orders.
table: shop.orders
comment: "Orders of the shop"   # the table's
columns:
  - name: id
    type: BIGINT        # as the team writes it
    nullable: false
  - {name: qty, type: int}
  - name: amount
    type: 'decimal(18,2)'
    comment: in euros
checks:
  positive: amount >= 0
partitioned_by: [qty]
properties:
  team: 'finance'       # who owns it
  steward: ${owner}
"""

LIVE = Table(
    NAME,
    (Column("id", "bigint", False), Column("qty", "int"), Column("amount", "decimal(18,2)", comment="in euros")),
    comment="Orders of the shop",
    checks=(Check("positive", "amount >= 0"),),
    partitioned_by=("qty",),
    properties=(("steward", "data"), ("team", "finance")),
)
VARS = {"owner": "data"}


def changed_lines(before: str, after: str) -> list[str]:
    from difflib import unified_diff

    return [
        line.rstrip("\n")
        for line in unified_diff(before.splitlines(True), after.splitlines(True))
        if line[:1] in "+-" and line[:3] not in ("+++", "---")
    ]


def test_a_spec_that_describes_the_live_table_is_left_as_it_is() -> None:
    adopted = adopt_text(SPEC, "orders.yaml", LIVE, VARS)
    assert not adopted.changed
    assert adopted.warnings == ()
    assert adopted.diff() == ""


def test_only_the_lines_that_differ_change_with_their_comments_and_quoting() -> None:
    live = Table(
        NAME,
        (
            Column("id", "bigint", False),
            Column("qty", "bigint"),
            Column("note", "string", comment="by hand"),
            Column("amount", "decimal(18,2)", comment="in dollars"),
        ),
        comment="All orders",
        checks=(Check("positive", "amount > 0"),),
        partitioned_by=("qty",),
        properties=(("steward", "data"), ("team", "growth")),
    )
    adopted = adopt_text(SPEC, "orders.yaml", live, VARS)
    assert changed_lines(SPEC, adopted.after) == [
        '-comment: "Orders of the shop"   # the table\'s',
        '+comment: "All orders"           # the table\'s',
        "-  - {name: qty, type: int}",
        "+  - {name: qty, type: bigint}",
        "+  - name: note",
        "+    type: string",
        "+    comment: by hand",
        "-    comment: in euros",
        "+    comment: in dollars",
        "-  positive: amount >= 0",
        "+  positive: amount > 0",
        "-  team: 'finance'       # who owns it",
        "+  team: 'growth'        # who owns it",
    ]
    assert "type: BIGINT        # as the team writes it" in adopted.after  # the same type, as written
    assert "steward: ${owner}" in adopted.after
    assert remaining_changes(adopted, live, VARS, None) == 0
    assert adopted.diff().startswith("--- a/orders.yaml\n+++ b/orders.yaml\n@@ ")


def test_a_column_dropped_a_check_removed_and_a_comment_gone() -> None:
    live = Table(
        NAME,
        (Column("id", "bigint", False), Column("qty", "int"), Column("amount", "decimal(18,2)")),
        comment=None,
        partitioned_by=("qty",),
        properties=(("steward", "data"), ("team", "finance")),
    )
    adopted = adopt_text(SPEC, "orders.yaml", live, VARS)
    assert changed_lines(SPEC, adopted.after) == [
        '-comment: "Orders of the shop"   # the table\'s',
        "-    comment: in euros",
        "-checks:",
        "-  positive: amount >= 0",
    ]
    assert remaining_changes(adopted, live, VARS, None) == 0


def test_a_value_from_a_var_stays_a_reference_or_is_reported() -> None:
    live = Table(
        NAME,
        LIVE.columns,
        comment=LIVE.comment,
        checks=LIVE.checks,
        partitioned_by=("qty",),
        properties=(("steward", "finance"), ("team", "finance")),
    )
    adopted = adopt_text(SPEC, "orders.yaml", live, VARS)
    assert not adopted.changed
    assert adopted.warnings == (
        "orders.yaml:17: properties.steward is written `${owner}` with a variable; the live value is `finance`: "
        "left as written (change the variable, or the line, by hand)",
    )
    # With the var's value the live one, the reference is kept.
    assert not adopt_text(SPEC, "orders.yaml", live, {"owner": "finance"}).changed


def test_a_views_query_changed() -> None:
    spec = (
        "# The big ones.\nview: shop.big\ncomment: big   # shown\nsql: |\n  SELECT id FROM shop.orders WHERE qty > 10\n"
    )
    live = View(TableName(None, "shop", "big"), "SELECT id, qty FROM shop.orders WHERE qty > 100", "big")
    adopted = adopt_text(spec, "big.yaml", live)
    assert changed_lines(spec, adopted.after) == [
        "-  SELECT id FROM shop.orders WHERE qty > 10",
        "+  SELECT id, qty FROM shop.orders WHERE qty > 100",
    ]
    assert remaining_changes(adopted, live, {}, None) == 0


def test_a_file_outside_fmts_layout_keeps_its_own() -> None:
    spec = "table:   shop.orders\ncolumns:\n- name: id\n  type: bigint\n  nullable: false\n- name: qty\n  type: int\n"
    live = Table(NAME, (Column("id", "bigint", False), Column("qty", "bigint")))
    adopted = adopt_text(spec, "orders.yaml", live)
    assert changed_lines(spec, adopted.after) == ["-  type: int", "+  type: bigint"]


@pytest.mark.parametrize("spec", [SPEC])
def test_the_result_is_still_fmt_clean_when_the_file_was(spec: str) -> None:
    canonical = format_text(spec.replace("BIGINT", "bigint"))
    live = replace(LIVE, columns=(*LIVE.columns[:1], Column("qty", "bigint"), *LIVE.columns[2:]))
    adopted = adopt_text(canonical, "orders.yaml", live, VARS)
    assert adopted.changed
    assert format_text(adopted.after) == adopted.after

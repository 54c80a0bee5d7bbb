"""adopt's pure part: a spec file's text edited to describe the live table or view, only where it differs."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import cast

import pytest

from delta_sync.model.catalog import Catalog
from delta_sync.model.state import CatalogState, Check, Column, Table, TableName, View
from delta_sync.planning.diff import planner
from delta_sync.review import adopting, environments
from delta_sync.specs.adopt import adopt_text, remaining_changes
from delta_sync.specs.fmt import format_text
from delta_sync.specs.project_file import load_project
from tests.unit.test_cli import FakeCatalog

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


# --- the project's defaults: ------------------------------------------------------------------------

CDF = "delta.enableChangeDataFeed"
RETENTION = "delta.logRetentionDuration"
DEFAULTS = {CDF: "true", RETENTION: "interval 30 days"}
BARE = "# Orders.\ntable: shop.orders\ncolumns:\n  - name: id\n    type: bigint   # the key\n"


def with_properties(*properties: tuple[str, str]) -> Table:
    return Table(NAME, (Column("id", "bigint"),), properties=properties)


def test_a_default_changed_or_removed_by_hand_is_written_where_the_spec_has_no_properties() -> None:
    live = with_properties((CDF, "false"))  # CDF turned off by hand, the retention unset by hand
    adopted = adopt_text(BARE, "orders.yaml", live, defaults=DEFAULTS)
    assert changed_lines(BARE, adopted.after) == [
        "+properties:",
        f"+  {CDF}: 'false'",
        f"+  {RETENTION}: null",
    ]
    assert remaining_changes(adopted, live, {}, None, DEFAULTS) == 0
    assert remaining_changes(adopted, live, {}, None) == 0  # the spec now says all of it: null is an opt-out
    assert format_text(adopted.after) == adopted.after
    # Without the defaults, the spec already describes the table (a default property is never adopted).
    assert not adopt_text(BARE, "orders.yaml", live).changed


def test_a_value_equal_to_the_default_is_never_written() -> None:
    spec = f"{BARE}properties:\n  team: a\n  {CDF}: 'false'   # off here\n  {RETENTION}: null\n"
    # Back to the defaults by hand: the spec's override and opt-out go, the default gives the values.
    live = with_properties((CDF, "TRUE"), (RETENTION, "interval 30 days"), ("team", "a"))
    adopted = adopt_text(spec, "orders.yaml", live, defaults=DEFAULTS)
    assert changed_lines(spec, adopted.after) == [f"-  {CDF}: 'false'   # off here", f"-  {RETENTION}: null"]
    assert remaining_changes(adopted, live, {}, None, DEFAULTS) == 0
    # Every property back to its default, and team gone: the whole mapping goes.
    only = f"{BARE}properties:\n  {CDF}: 'false'\n  team: a\n"
    gone = adopt_text(
        only, "orders.yaml", with_properties((CDF, "true"), (RETENTION, "interval 30 days")), None, None, DEFAULTS
    )
    assert gone.after == BARE
    assert "interval 30 days" not in gone.after


def test_a_property_the_spec_sets_over_a_default_and_the_table_lacks_is_opted_out_of() -> None:
    spec = f"{BARE}properties:\n  {RETENTION}: interval 7 days   # shorter here\n"
    live = with_properties((CDF, "true"))
    adopted = adopt_text(spec, "orders.yaml", live, defaults=DEFAULTS)
    assert changed_lines(spec, adopted.after) == [
        f"-  {RETENTION}: interval 7 days   # shorter here",
        f"+  {RETENTION}: null              # shorter here",
    ]
    assert remaining_changes(adopted, live, {}, None, DEFAULTS) == 0
    # A live value other than the default is written over the spec's, in place.
    other = with_properties((CDF, "true"), (RETENTION, "interval 90 days"))
    again = adopt_text(spec, "orders.yaml", other, defaults=DEFAULTS)
    assert changed_lines(spec, again.after) == [
        f"-  {RETENTION}: interval 7 days   # shorter here",
        f"+  {RETENTION}: interval 90 days  # shorter here",
    ]


def test_a_table_as_the_defaults_make_it_is_left_as_it_is() -> None:
    live = with_properties((CDF, "true"), (RETENTION, "interval 30 days"))
    assert not adopt_text(BARE, "orders.yaml", live, defaults=DEFAULTS).changed


def test_adopt_of_a_project_with_defaults_leaves_plan_empty_and_never_adopts_an_ignored_table(tmp_path: Path) -> None:
    (tmp_path / "delta-sync.yaml").write_text(
        f"defaults:\n  {CDF}: true\nenvs:\n  local:\n    defaults:\n      {RETENTION}: interval 30 days\n"
        "ignore: [shop.*_sink]\n"
    )
    spec = tmp_path / "specs" / "orders.yaml"
    spec.parent.mkdir()
    spec.write_text(BARE)
    sink = TableName(None, "shop", "events_sink")
    live = CatalogState(
        {NAME: with_properties((CDF, "false")), sink: Table(sink, (Column("id", "bigint"),))},
        schemas=frozenset({NAME.schema_name}),
    )
    project = load_project(tmp_path)
    environment = project.env("local")
    catalog = cast(Catalog, FakeCatalog(live))  # adopt reads only: no history, no probes

    def desired() -> CatalogState:
        return environments.load_desired(project, environment, tmp_path / "specs")

    assert planner.plan(live, desired()).changes
    adopted = adopting.adopt_specs(catalog, desired(), environment)
    assert [a.source for a in adopted.changed] == [str(spec)]
    assert adopted.notes == ()  # the sink is another tool's: not listed as left to import
    adopting.write(adopted)
    assert spec.read_text() == f"{BARE}properties:\n  {CDF}: 'false'\n  {RETENTION}: null\n"
    assert not planner.plan(live, desired()).changes

    named = adopting.adopt_specs(catalog, desired(), environment, ["shop.events_sink"])
    assert named.adoptions == ()
    assert named.notes == (
        "shop.events_sink: matches `shop.*_sink` under ignore: in delta-sync.yaml, so another tool manages it; "
        "not adopted (remove the pattern if delta-sync is to manage it)",
    )

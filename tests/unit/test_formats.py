"""Golden tests of every output format (text, JSON, SQL, Markdown) over one plan that has it all.

The golden files live in tests/unit/golden/. After an intended change to the output, rewrite them
instead of comparing, then read the diff as a user would before committing:

    DELTA_SYNC_UPDATE_GOLDEN=1 /work/venv/bin/python -m pytest tests/unit/test_formats.py -p no:cacheprovider

The plan is built purely from model objects (no Spark): one current and one desired state whose
plan holds every action kind (a rewrite and a backfill among them), assessed with
`allowed = {breaking, irreversible}` and hand-made probe results (clean, with violations and sample
rows, skipped by --no-probes, and the count of rows a backfill updates), so that every hazard class
shows up, some allowed and some blocked.
"""

from __future__ import annotations

import dataclasses
import io
import json
import os
import re
from pathlib import Path
from typing import Any, Literal

import pytest
from rich.console import Console, RenderableType

from delta_sync import api, planfile, render
from delta_sync.actions import (
    Action,
    AddCheck,
    AddColumns,
    AddForeignKey,
    AddPrimaryKey,
    AlterColumnType,
    Backfill,
    ClusterBy,
    CreateSchema,
    CreateTable,
    DropCheck,
    DropColumns,
    DropForeignKey,
    DropNotNull,
    DropPrimaryKey,
    EnableFeature,
    Notice,
    Plan,
    RenameColumn,
    RewriteTable,
    SetColumnComment,
    SetDefault,
    SetProperties,
    SetTableComment,
    UnsetProperties,
    Unsupported,
)
from delta_sync.hazards import Assessment, Hazard, ProbeResult, assess
from delta_sync.model import CatalogState, Check, ForeignKey, Identity, Origin, PrimaryKey, Table
from delta_sync.planner import NOT_NULL_PREFIX, plan
from tests.unit.builders import column, live, name, state, table

UPDATE = os.environ.get("DELTA_SYNC_UPDATE_GOLDEN") == "1"
GOLDEN_DIR = Path(__file__).parent / "golden"
PLAN_ID = "0123456789abcdef"
ALLOWED = frozenset({Hazard.BREAKING, Hazard.IRREVERSIBLE})
ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")

ALL_KINDS: tuple[type[Action], ...] = (
    CreateSchema,
    CreateTable,
    AddColumns,
    EnableFeature,
    RenameColumn,
    DropColumns,
    AlterColumnType,
    DropNotNull,
    SetDefault,
    SetProperties,
    UnsetProperties,
    ClusterBy,
    SetTableComment,
    SetColumnComment,
    AddCheck,
    DropCheck,
    Notice,
    Unsupported,
    AddPrimaryKey,
    DropPrimaryKey,
    AddForeignKey,
    DropForeignKey,
    Backfill,
    RewriteTable,
)


def at(file: str, line: int) -> Origin:
    return Origin(f"specs/{file}", line)


def with_checks(base: Table, *checks: Check, **changes: Any) -> Table:
    """`base` with checks that carry their spec line (the builder's `checks=` has none)."""
    return dataclasses.replace(base, checks=tuple(checks), **changes)


# --- the state --------------------------------------------------------------------------------------


def current_state() -> CatalogState:
    orders = live(
        with_checks(
            table(
                "shop.orders",
                column("order_id", "bigint", nullable=False, comment="Surrogate key"),
                column("status", "string"),
                column("cust", "bigint"),
                column("qty", "int"),
                column("placed_at", "timestamp", nullable=False),
                column("channel", "string"),
                column("address", "struct<city:string>"),
                comment="Orders",
                properties={"owner.team": "crm", "owner.ticket": "T-1"},
            ),
            Check("known_status", "status IN ('new', 'paid')"),
        )
    )
    payments = live(
        with_checks(
            table(
                "shop.payments",
                column("id", "bigint", nullable=False),
                column("amount", "decimal(18,2)"),
                column("legacy_ref", "string"),
                properties={"delta.columnMapping.mode": "name"},
            ),
            Check("legacy_ref_format", "legacy_ref LIKE 'P-%'"),
        )
    )
    orders = dataclasses.replace(
        orders, primary_key=PrimaryKey("pk_orders", ("order_id",)), foreign_keys=(CUSTOMER_FK,)
    )
    customers = live(
        table(
            "shop.customers",
            column("id", "bigint"),
            column("name", "string"),
            checks={"name_not_blank": "name <> ''"},
            properties={"owner.team": "crm", "delta.feature.checkConstraints": "supported"},
        ),
        version=12,
        size_bytes=3 * 1024 * 1024,
    )
    reviews = live(table("shop.reviews", column("Stars", "int")))
    products = live(table("shop.products", column("id", "bigint")))
    # Schema `sales` does not exist yet.
    return state(orders, payments, customers, reviews, products)


def desired_state() -> CatalogState:
    invoices = with_checks(
        table(
            "sales.invoices",
            column("id", "bigint", nullable=False, identity=Identity(1, 1), origin=at("sales/invoices.yaml", 4)),
            column("amount", "decimal(18,2)", nullable=False, comment="Gross amount"),
            column("amount_cents", "bigint", generated="CAST(amount * 100 AS BIGINT)"),
            column("currency", "string", default="'EUR'"),
            column("issued_on", "date"),
            comment="Invoices",
            properties={"delta.enableDeletionVectors": "true"},
            origin=at("sales/invoices.yaml", 1),
        ),
        Check("positive_amount", "amount >= 0", at("sales/invoices.yaml", 20)),
        clustered_by=("issued_on",),
        primary_key=PrimaryKey("pk_sales_invoices__id", ("id",), at("sales/invoices.yaml", 22)),
    )
    orders = with_checks(
        table(
            "shop.orders",
            column("order_id", "bigint", nullable=False, comment="Primary key", origin=at("shop/orders.yaml", 4)),
            column("status", "string", nullable=False, origin=at("shop/orders.yaml", 7)),
            column("customer_id", "bigint", renamed_from="cust", origin=at("shop/orders.yaml", 9)),
            column("qty", "bigint", origin=at("shop/orders.yaml", 11)),
            column("placed_at", "timestamp", origin=at("shop/orders.yaml", 13)),
            column("channel", "string", default="'web'", origin=at("shop/orders.yaml", 15)),
            column("address", "struct<city:string,zip:string>", origin=at("shop/orders.yaml", 17)),
            column("note", "string", comment="Free text", origin=at("shop/orders.yaml", 20)),
            comment="Customer orders",
            properties={"owner.team": "billing", "delta.enableChangeDataFeed": "true"},
            origin=at("shop/orders.yaml", 1),
        ),
        Check("known_status", "status IN ('new', 'paid', 'shipped')", at("shop/orders.yaml", 30)),
        clustered_by=("order_id",),
        removed_properties=("owner.ticket",),
        foreign_keys=(dataclasses.replace(CUSTOMER_FK, columns=("customer_id",), origin=at("shop/orders.yaml", 33)),),
    )
    payments = with_checks(
        table(
            "shop.payments",
            column("id", "bigint", nullable=False),
            column("amount", "decimal(18,2)"),
            # NOT NULL without `backfill:` on a table with rows: unsupported.
            column("method", "string", nullable=False, origin=at("shop/payments.yaml", 8)),
            comment="Card payments",
            properties={"delta.columnMapping.mode": "name"},
            origin=at("shop/payments.yaml", 1),
        ),
        Check("positive_amount", "amount > 0", at("shop/payments.yaml", 12)),
        primary_key=PrimaryKey("pk_shop_payments__id", ("id",), at("shop/payments.yaml", 14)),
    )
    # Not a widening: the table is rewritten; the new NOT NULL `email` is backfilled.
    customers = with_checks(
        table(
            "shop.customers",
            column("id", "int", origin=at("shop/customers.yaml", 4)),
            column("name", "string", origin=at("shop/customers.yaml", 6)),
            column("email", "string", nullable=False, backfill="'unknown'", origin=at("shop/customers.yaml", 8)),
            origin=at("shop/customers.yaml", 1),
        ),
        Check("name_not_blank", "name <> ''", at("shop/customers.yaml", 12)),
    )
    reviews = table("shop.reviews", column("stars", "int", origin=at("shop/reviews.yaml", 3)))
    products = table("shop.products", column("id", "bigint"))
    return state(invoices, orders, payments, customers, reviews, products)


CUSTOMER_FK = ForeignKey("fk_orders_customer", ("cust",), name("shop.customers"), ("id",))


PROBES = (
    # Clean: Delta's per-file null counts answered it.
    ProbeResult(name("shop.orders"), f"{NOT_NULL_PREFIX}status", 0, source="statistics"),
    # Skipped: the user ran with --no-probes.
    ProbeResult(name("shop.orders"), "known_status", None, skipped="--no-probes"),
    # Violated, with two sample rows.
    ProbeResult(
        name("shop.payments"),
        "positive_amount",
        2,
        samples=(
            (("id", "7"), ("amount", "0.00")),
            (("id", "12"), ("amount", "-5.00")),
        ),
    ),
    # A new primary key over existing rows: one value repeats.
    ProbeResult(name("shop.payments"), "pk_shop_payments__id", 1, samples=((("id", "3"), ("count", "2")),)),
    # A foreign key moved to the renamed column: every row has its parent.
    ProbeResult(name("shop.orders"), "fk_orders_customer", 0),
    # The rewrite's CAST of `id` to int: one value does not fit.
    ProbeResult(name("shop.customers"), "ds_cast_id", 1, samples=((("id", "4000000000"),),)),
    # The rows the backfill of `email` updates, and its NOT NULL once backfilled.
    ProbeResult(name("shop.customers"), "ds_fill_email", 3),
    ProbeResult(name("shop.customers"), f"{NOT_NULL_PREFIX}email", 0),
)


def full_review() -> tuple[Plan, CatalogState, Assessment]:
    current, desired = current_state(), desired_state()
    the_plan = plan(current, desired)
    return the_plan, current, assess(the_plan, current, PROBES, ALLOWED)


# --- helpers ----------------------------------------------------------------------------------------


def rendered(renderable: RenderableType, color_system: Literal["truecolor"] | None = None) -> str:
    buffer = io.StringIO()
    console = Console(
        width=100,
        file=buffer,
        color_system=color_system,
        theme=render.THEME,
        no_color=False,
        force_terminal=color_system is not None,
    )
    console.print(renderable)
    return buffer.getvalue()


def stripped_lines(text: str) -> str:
    # Rich pads wrapped lines with trailing spaces; they carry no meaning and editors strip them.
    return "\n".join(line.rstrip() for line in text.splitlines()) + "\n"


def check_golden(file_name: str, actual: str) -> None:
    path = GOLDEN_DIR / file_name
    if UPDATE:
        GOLDEN_DIR.mkdir(exist_ok=True)
        path.write_text(actual, encoding="utf-8", newline="\n")
        return
    assert path.is_file(), f"{path} is missing: run with DELTA_SYNC_UPDATE_GOLDEN=1 to create it"
    expected = path.read_text(encoding="utf-8")
    assert actual == expected, f"{file_name} differs from its golden file (DELTA_SYNC_UPDATE_GOLDEN=1 rewrites it)"


def text_output() -> str:
    the_plan, _current, assessment = full_review()
    return stripped_lines(rendered(render.render_text(the_plan, assessment)))


# --- the scenario covers everything -----------------------------------------------------------------


def test_plan_holds_every_action_kind() -> None:
    the_plan, _current, _assessment = full_review()
    kinds = {type(a) for a in the_plan.actions}
    assert kinds == set(ALL_KINDS)
    created = next(a for a in the_plan.actions if isinstance(a, CreateTable))
    cols = {c.name: c for c in created.table.columns}
    assert cols["id"].identity is not None
    assert cols["amount_cents"].generated is not None
    assert cols["currency"].default is not None
    assert created.table.clustered_by == ("issued_on",)
    assert any(isinstance(a, AddColumns) and a.parent == ("address",) for a in the_plan.actions)
    assert any(isinstance(a, AddColumns) and a.parent == () for a in the_plan.actions)
    assert any(isinstance(a, AddCheck) and a.check.name.startswith(NOT_NULL_PREFIX) for a in the_plan.actions)
    rewrite = next(a for a in the_plan.actions if isinstance(a, RewriteTable))
    assert [c.column for c in rewrite.conversions] == ["id"]
    assert rewrite.restore_version == 12
    assert [c.name for c in rewrite.checks] == ["name_not_blank"]
    # The rewrite carries the table's properties but not its protocol features.
    assert rewrite.properties == (("owner.team", "crm"),)
    backfill = next(a for a in the_plan.actions if isinstance(a, Backfill))
    assert (backfill.name, backfill.column, backfill.expression) == (name("shop.customers"), "email", "'unknown'")


def test_assessment_holds_every_hazard_class_allowed_and_blocked() -> None:
    _plan, _current, assessment = full_review()
    assert {f.hazard for f in assessment.findings} == set(Hazard)
    blocked = {b.finding.hazard for b in assessment.blocks}
    assert blocked == {Hazard.DESTRUCTIVE, Hazard.DATA_DEPENDENT, Hazard.UNSUPPORTED, Hazard.REWRITE}
    allowed = {f.hazard for f in assessment.findings if assessment.block_for(f) is None}
    assert allowed == {Hazard.BREAKING, Hazard.IRREVERSIBLE, Hazard.DATA_DEPENDENT}
    assert {str(t) for t in assessment.blocked_tables} == {"shop.customers", "shop.payments"}
    # Each probe matches a data-dependent finding (clean, violated with samples, skipped), or the
    # rewrite finding of a backfill, whose probe counts the rows it updates.
    data = [f for f in assessment.findings if f.hazard is Hazard.DATA_DEPENDENT]
    fills = [f for f in assessment.findings if f.hazard is Hazard.REWRITE and f.check is not None]
    assert [f.check for f in fills] == ["ds_fill_email"]
    assert fills[0].reason.endswith("; 3 rows to update")
    assert sorted(f.check or "" for f in data + fills) == sorted(p.check for p in PROBES)


# --- golden files -----------------------------------------------------------------------------------


def test_text_golden() -> None:
    check_golden("plan.txt", text_output())


def test_json_golden() -> None:
    the_plan, _current, assessment = full_review()
    document = render.plan_json(the_plan, assessment)
    check_golden("plan.json", json.dumps(document, indent=2, sort_keys=True) + "\n")


def test_sql_golden() -> None:
    the_plan, _current, assessment = full_review()
    check_golden("plan.sql", render.render_sql(the_plan, assessment, PLAN_ID))


def test_markdown_golden() -> None:
    the_plan, _current, assessment = full_review()
    check_golden("plan.md", render.render_markdown(the_plan, assessment))


# --- colour -----------------------------------------------------------------------------------------


def test_no_color_output_has_no_ansi_escapes() -> None:
    the_plan, _current, assessment = full_review()
    out = rendered(render.render_text(the_plan, assessment))
    assert "\x1b" not in out


def test_color_output_is_the_same_text_once_ansi_is_stripped() -> None:
    the_plan, _current, assessment = full_review()
    colored = rendered(render.render_text(the_plan, assessment), color_system="truecolor")
    assert ANSI.search(colored) is not None, "the colour console should emit escapes"
    plain = rendered(render.render_text(the_plan, assessment))
    assert stripped_lines(ANSI.sub("", colored)) == stripped_lines(plain)


# --- text details a reader relies on ----------------------------------------------------------------


def test_text_lists_every_table_that_changes_and_not_the_unchanged_one() -> None:
    out = text_output()
    for header in (
        "+ create schema sales",
        "+ create table sales.invoices  (specs/sales/invoices.yaml)",
        "! blocked shop.customers",
        "~ change table shop.orders",
        "! blocked shop.payments",
        "# shop.reviews: no changes",
    ):
        assert header in out.splitlines()
    assert "shop.products" not in out
    the_plan, _current, assessment = full_review()
    # Rich wraps the summary at 100 columns; the line itself is whole.
    assert render.render_summary(the_plan, assessment).plain == (
        "Plan: 1 to create, 1 to change, 2 unchanged, 2 blocked. To allow: --allow destructive,rewrite. "
        "Data checks skipped (--no-probes): new rules may still fail on existing rows."
    )


def test_text_blocked_items_say_why_and_how_to_unblock() -> None:
    out = text_output()
    assert "! blocked (destructive): dropping `legacy_ref`" in out
    assert "-> allow it with --allow destructive" in out
    assert "! blocked (data-dependent): will fail: 2 rows violate `positive_amount`" in out
    assert "        sample rows:\n          id  amount\n          7   0.00\n          12  -5.00\n" in out
    assert 'fix those rows first (delta-sync sql "UPDATE shop.payments ..."), or change the rule' in out


def test_text_probe_outcomes() -> None:
    out = text_output()
    assert "✓ data-dependent: checked in Delta's statistics: no existing row violates it" in out
    assert "⚠ data-dependent: not checked (--no-probes)" in out


# --- readability over many tables -------------------------------------------------------------------


def fifty_tables() -> tuple[Plan, CatalogState]:
    tables = [
        table(f"warehouse.t{i:02d}", column("id", "bigint", nullable=False), column("value", "string"))
        for i in range(50)
    ]
    current = state(*(live(t) for t in tables))
    desired = list(tables)
    desired[3] = dataclasses.replace(tables[3], comment="Third")
    desired[17] = table(
        "warehouse.t17",
        column("id", "bigint", nullable=False),
        column("value", "string"),
        column("extra", "int"),
        origin=at("warehouse/t17.yaml", 1),
    )
    desired[42] = dataclasses.replace(tables[42], properties=(("owner.team", "data"),))
    return plan(current, state(*desired)), current


def test_fifty_tables_golden_lists_only_the_changes() -> None:
    the_plan, current = fifty_tables()
    assessment = assess(the_plan, current, (), ())
    out = stripped_lines(rendered(render.render_text(the_plan, assessment)))
    check_golden("fifty_tables.txt", out)
    lines = out.splitlines()
    assert len(lines) < 30
    assert lines[-1] == "Plan: 0 to create, 3 to change, 47 unchanged."
    changed = {"warehouse.t03", "warehouse.t17", "warehouse.t42"}
    for i in range(50):
        table_name = f"warehouse.t{i:02d}"
        assert (table_name in out) == (table_name in changed)


# --- saved plan document ----------------------------------------------------------------------------

DOCUMENT_KEYS = {
    "format_version",
    "tool_version",
    "environment",
    "plan_id",
    "specs_hash",
    "tables",
    "summary",
    "actions",
    "probes",
    "statements",
    "blocked",
    "allowed",
    "typed_actions",
    "desired",
}


def test_plan_document_round_trips_through_saved_plan() -> None:
    the_plan, current, assessment = full_review()
    desired = desired_state()
    document = api.plan_document(api.Review(the_plan, current, assessment), desired, PLAN_ID, "feedfacecafebeef")
    assert set(document) == DOCUMENT_KEYS
    loaded = json.loads(json.dumps(document))
    saved = planfile.SavedPlan.model_validate(loaded)
    assert saved.plan_id == PLAN_ID
    assert saved.environment == api.LOCAL_ENVIRONMENT
    assert saved.specs_hash == "feedfacecafebeef"
    assert saved.blocked is True
    assert [t.name for t in saved.tables] == [str(n) for n in sorted(desired.tables)]
    assert not saved.tables[0].fingerprint.exists  # sales.invoices is new
    assert all(t.fingerprint.exists for t in saved.tables[1:])
    assert [(s.table, s.kind, s.sql, s.check) for s in saved.statements] == [
        (s.table, s.kind, s.sql, s.check) for s in api.statements_of(the_plan)
    ]
    # What apply reads survives a second round through the model.
    assert planfile.SavedPlan.model_validate(saved.model_dump()) == saved


@pytest.mark.parametrize("kind", [k.__name__ for k in ALL_KINDS])
def test_json_has_each_action_kind(kind: str) -> None:
    the_plan, _current, assessment = full_review()
    kinds = [a["kind"] for a in render.plan_json(the_plan, assessment)["actions"]]
    assert kind in kinds


# --- known bugs found by reading the golden files -------------------------------------------------


def sql_sections() -> dict[str, list[str]]:
    """render_sql's output split at its `-- <table>` headers."""
    the_plan, _current, assessment = full_review()
    sections: dict[str, list[str]] = {}
    current = ""
    for block in render.render_sql(the_plan, assessment, PLAN_ID).split("\n\n")[1:]:
        lines = block.splitlines()
        current = lines[0].removeprefix("-- ").split(":")[0]
        sections[current] = lines[1:]
    return sections


def test_sql_policy_block_note_is_in_its_tables_section() -> None:
    sections = sql_sections()
    assert not any(line.startswith("-- BLOCKED") for line in sections.get("shop.reviews", []))
    assert any(line.startswith("-- BLOCKED (destructive)") for line in sections["shop.payments"])


def test_sql_of_a_policy_blocked_table_is_not_runnable_as_is() -> None:
    payments = sql_sections()["shop.payments"]
    assert payments
    assert all(line.startswith("--") for line in payments)


def markdown_rows() -> list[str]:
    the_plan, _current, assessment = full_review()
    return [line for line in render.render_markdown(the_plan, assessment).splitlines() if line.startswith("| `")]


def test_markdown_marks_only_the_line_a_hazard_is_about() -> None:
    (cdf,) = [row for row in markdown_rows() if "property delta.enableChangeDataFeed" in row]
    (team,) = [row for row in markdown_rows() if "property owner.team" in row]
    assert cdf.endswith("| irreversible |")
    assert team.endswith("|  |")


def test_markdown_hides_the_drop_of_a_replaced_check_like_the_text() -> None:
    assert not any("- check known_status" in row for row in markdown_rows())


def test_markdown_says_what_the_text_summary_says() -> None:
    the_plan, _current, assessment = full_review()
    markdown = render.render_markdown(the_plan, assessment)
    assert "--no-probes" in markdown
    assert "--allow destructive" in markdown.split("#### Blocked")[0]


def test_text_property_hazard_sits_under_its_property() -> None:
    lines = text_output().splitlines()
    index = next(i for i, line in enumerate(lines) if "+ property delta.enableChangeDataFeed" in line)
    assert "irreversible (allowed): `delta.enableChangeDataFeed`" in lines[index + 1]


def test_every_hazard_of_a_spec_change_points_at_the_spec() -> None:
    _plan, _current, assessment = full_review()
    assert all(f.origin is not None for f in assessment.findings)


def test_text_tells_identity_always_from_by_default() -> None:
    by_default = table("s.t", column("id", "bigint", nullable=False, identity=Identity(1, 1, always=False)))
    out = rendered(render.render_text(plan(state(schemas=("s",)), state(by_default))))
    assert "BY DEFAULT" in out


def test_json_probes_say_how_they_were_checked() -> None:
    the_plan, _current, assessment = full_review()
    probes = render.plan_json(the_plan, assessment)["probes"]
    assert [p.get("source") for p in probes] == ["statistics", *["scan"] * 7]


def test_saved_plan_holds_no_table_data() -> None:
    the_plan, current, assessment = full_review()
    document = api.plan_document(api.Review(the_plan, current, assessment), desired_state(), PLAN_ID, "0" * 16)
    assert all("samples" not in probe for probe in document["probes"])
    assert "-5.00" not in json.dumps(document)

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
import html
import io
import json
import os
import re
from pathlib import Path
from typing import Any, Literal

import pytest
from markdown_it import MarkdownIt
from rich.console import Console, Group, RenderableType
from rich.text import Text

from delta_sync.model.catalog import ProbeResult
from delta_sync.model.state import CatalogState, Check, Consumer, ForeignKey, Identity, Origin, PrimaryKey, Table
from delta_sync.planfile import document as planfile
from delta_sync.planning import ddl
from delta_sync.planning.actions import (
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
from delta_sync.planning.diff.conventions import NOT_NULL_PREFIX
from delta_sync.planning.diff.planner import plan
from delta_sync.planning.hazard_policy import assess
from delta_sync.planning.hazards import Assessment, Hazard
from delta_sync.planning.rehearsal import Outcome, Rehearsal
from delta_sync.planning.statements import statements_of
from delta_sync.render import text as render
from delta_sync.render.document import plan_json
from delta_sync.render.markdown import render_markdown
from delta_sync.render.sql import render_sql
from delta_sync.review import policy, results
from tests.unit.builders import column, live, name, state, table

UPDATE = os.environ.get("DELTA_SYNC_UPDATE_GOLDEN") == "1"
GOLDEN_DIR = Path(__file__).parent / "golden"
PLAN_ID = "0123456789abcdef"
ALLOWED = frozenset({Hazard.BREAKING, Hazard.IRREVERSIBLE, Hazard.COMPATIBILITY})
# An old Spark must keep reading: the new invoices table's deletion vectors are beyond it.
CONSUMERS = (Consumer("delta-spark", (2, 0)),)
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
        ),
        protocol=(1, 3),
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


def rehearsals(the_plan: Plan) -> tuple[Rehearsal, ...]:
    """plan --rehearse: the new table passed, Delta refused a statement of shop.payments on its clone,
    and shop.orders could not be cloned (a catalog that does not take new tables)."""
    payments = name("shop.payments")
    index = next(i for i, a in enumerate(the_plan.actions) if a in the_plan.actions_for(payments) and ddl.to_sql(a))
    statement = ddl.to_sql(the_plan.actions[index])[0]
    return (
        Rehearsal(name("sales.invoices"), Outcome.PASSED, 0.84, name("sales__delta_sync_rehearsal.x")),
        Rehearsal(
            payments,
            Outcome.FAILED,
            1.93,
            name("shop__delta_sync_rehearsal.x"),
            statement=statement,
            index=index,
            error_class="DELTA_NEW_CHECK_CONSTRAINT_VIOLATION",
            message="2 rows in shop.payments violate the new CHECK constraint (amount > 0)",
        ),
        Rehearsal(
            name("shop.orders"),
            Outcome.NOT_POSSIBLE,
            0.0,
            reason="cannot create the scratch schema shop__delta_sync_rehearsal (permission denied)",
        ),
    )


def full_review() -> tuple[Plan, CatalogState, Assessment]:
    current, desired = current_state(), desired_state()
    the_plan = plan(current, desired)
    return the_plan, current, assess(the_plan, current, PROBES, ALLOWED, CONSUMERS, rehearsals(the_plan))


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
    # The team policy's classes come from settings this scenario does not use: tests/unit/test_team_policy.py.
    assert {f.hazard for f in assessment.findings} == set(Hazard) - {Hazard.PROTECTED, Hazard.LIMIT, Hazard.RULE}
    blocked = {b.finding.hazard for b in assessment.blocks}
    assert blocked == {Hazard.DESTRUCTIVE, Hazard.DATA_DEPENDENT, Hazard.UNSUPPORTED, Hazard.REWRITE, Hazard.REHEARSAL}
    allowed = {f.hazard for f in assessment.findings if assessment.block_for(f) is None}
    assert allowed == {Hazard.BREAKING, Hazard.IRREVERSIBLE, Hazard.DATA_DEPENDENT, Hazard.COMPATIBILITY}
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
    document = plan_json(the_plan, assessment)
    check_golden("plan.json", json.dumps(document, indent=2, sort_keys=True) + "\n")


def test_sql_golden() -> None:
    the_plan, _current, assessment = full_review()
    check_golden("plan.sql", render_sql(the_plan, assessment, PLAN_ID))


def test_markdown_golden() -> None:
    the_plan, _current, assessment = full_review()
    check_golden("plan.md", render_markdown(the_plan, assessment))


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
    "current",
    "protocols",
    "rehearsals",
    "readers",
    "writers",
    "settings",
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
    "unmanaged",
    "unordered",
}


def test_plan_document_round_trips_through_saved_plan() -> None:
    the_plan, current, assessment = full_review()
    desired = desired_state()
    document = policy.plan_document(
        results.Assessed(the_plan, current, assessment), desired, PLAN_ID, "feedfacecafebeef"
    )
    assert set(document) == DOCUMENT_KEYS
    loaded = json.loads(json.dumps(document))
    saved = planfile.SavedPlan.model_validate(loaded)
    assert saved.plan_id == PLAN_ID
    assert saved.environment == policy.LOCAL_ENVIRONMENT
    assert saved.specs_hash == "feedfacecafebeef"
    assert saved.blocked is True
    assert [t.name for t in saved.tables] == [str(n) for n in sorted(desired.tables)]
    assert not saved.tables[0].fingerprint.exists  # sales.invoices is new
    assert all(t.fingerprint.exists for t in saved.tables[1:])
    assert [(s.table, s.kind, s.sql, s.check) for s in saved.statements] == [
        (s.table, s.kind, s.sql, s.check) for s in statements_of(the_plan)
    ]
    # What apply reads survives a second round through the model.
    assert planfile.SavedPlan.model_validate(saved.model_dump()) == saved


@pytest.mark.parametrize("kind", [k.__name__ for k in ALL_KINDS])
def test_json_has_each_action_kind(kind: str) -> None:
    the_plan, _current, assessment = full_review()
    kinds = [a["kind"] for a in plan_json(the_plan, assessment)["actions"]]
    assert kind in kinds


# --- known bugs found by reading the golden files -------------------------------------------------


def sql_sections() -> dict[str, list[str]]:
    """render_sql's output split at its `-- <table>` headers."""
    the_plan, _current, assessment = full_review()
    sections: dict[str, list[str]] = {}
    current = ""
    for block in render_sql(the_plan, assessment, PLAN_ID).split("\n\n")[1:]:
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


def markdown_lines(table_name: str) -> list[str]:
    """The lines of a table's section of the Markdown plan, up to its SQL."""
    the_plan, _current, assessment = full_review()
    markdown = render_markdown(the_plan, assessment)
    section = markdown.split(f"<details><summary><code>{table_name}</code>", 1)[1].split("</details>")[0]
    return section.split("<details><summary>SQL")[0].splitlines()


def test_markdown_puts_a_hazard_under_the_line_it_is_about() -> None:
    lines = markdown_lines("shop.orders")
    cdf = lines.index('+ property delta.enableChangeDataFeed = "true"')
    assert lines[cdf + 1].startswith("  ⚠ irreversible (allowed): `delta.enableChangeDataFeed`")
    team = lines.index('~ property owner.team: "crm" -> "billing"')
    assert not lines[team + 1].startswith(" ")


def test_markdown_hides_the_drop_of_a_replaced_check_like_the_text() -> None:
    lines = markdown_lines("shop.orders")
    assert not any(line.startswith("- check known_status") for line in lines)
    assert sum("check known_status" in line for line in lines) == 1


def test_markdown_says_what_the_text_summary_says() -> None:
    the_plan, _current, assessment = full_review()
    first = render_markdown(the_plan, assessment).splitlines()[0]
    assert first == (
        "**delta-sync plan: 1 to create, 1 to change, 2 unchanged, 2 blocked.** To allow: --allow destructive,rewrite. "
        "Data checks skipped (--no-probes): new rules may still fail on existing rows."
    )
    assert first.replace("**", "").replace("delta-sync plan:", "Plan:") == (
        render.render_summary(the_plan, assessment).plain
    )


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
    probes = plan_json(the_plan, assessment)["probes"]
    assert [p.get("source") for p in probes] == ["statistics", *["scan"] * 7]


def test_saved_plan_holds_no_table_data() -> None:
    the_plan, current, assessment = full_review()
    document = policy.plan_document(results.Assessed(the_plan, current, assessment), desired_state(), PLAN_ID, "0" * 16)
    assert all("samples" not in probe for probe in document["probes"])
    assert "-5.00" not in json.dumps(document)


# --- Markdown: layout, size limit, escaping ---------------------------------------------------------

GFM = MarkdownIt("commonmark").enable(["table", "strikethrough"])
SECTION = re.compile(r"^<details><summary><code>([^<]+)</code>: (.*)</summary>$", re.MULTILINE)
TAG = re.compile(r"<[^>]+>")


def markdown_of_full_review() -> str:
    the_plan, _current, assessment = full_review()
    return render_markdown(the_plan, assessment)


def shown(markdown: str) -> str:
    """Inline Markdown as a reader sees it: rendered (as CommonMark with GitHub's extensions), tags removed."""
    return html.unescape(TAG.sub("", GFM.renderInline(markdown)))


def sections(markdown: str) -> dict[str, str]:
    """Each table's section, from its <details> to the </details> that closes it."""
    found: dict[str, str] = {}
    for match in SECTION.finditer(markdown):
        depth, lines, fenced = 0, [], ""
        for line in markdown[match.start() :].splitlines():
            lines.append(line)
            ticks = re.match(r"`{3,}", line)
            if fenced:  # in a code block, until a fence at least as long, alone on its line
                fenced = "" if ticks and line.strip() == ticks.group() and len(line) >= len(fenced) else fenced
            elif ticks:
                fenced = ticks.group()
            else:
                depth += line.count("<details>") - line.count("</details>")
                if depth == 0:
                    break
        found[match.group(1)] = "\n".join(lines)
    return found


def fence(section: str, info: str) -> list[str]:
    """The lines of the section's code block of that info string (its fence may be longer than three)."""
    (token,) = [t for t in GFM.parse(section) if t.type == "fence" and t.info == info]
    return token.content.splitlines()


def utf16_size(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def many_tables(count: int, columns: int = 8, comment: str = "") -> Plan:
    current = [table(f"warehouse.t{i:03d}", column("id", "bigint")) for i in range(count)]
    desired = [
        table(
            f"warehouse.t{i:03d}",
            column("id", "bigint"),
            *(column(f"c{c}", "string", comment=comment or None) for c in range(columns)),
            comment=comment or None,
        )
        for i in range(count)
    ]
    return plan(state(*current), state(*desired))


def test_markdown_starts_with_the_summary_then_blocked_items_then_the_tables() -> None:
    the_plan, _current, assessment = full_review()
    lines = render_markdown(the_plan, assessment).splitlines()
    assert lines[0].startswith("**delta-sync plan: 1 to create, 1 to change, 2 unchanged, 2 blocked.** To allow:")
    blocked = lines.index(f"#### Blocked ({len(assessment.blocks)})")
    schema = lines.index("Creates schema `sales`: ``CREATE SCHEMA IF NOT EXISTS `sales`;``")
    first_table = next(i for i, line in enumerate(lines) if line.startswith("<details>"))
    assert 0 < blocked < schema < first_table
    items = [line for line in lines[blocked:schema] if line.startswith("- ")]
    fixes = [line for line in lines[blocked:schema] if line.startswith("  - **Fix:** ")]
    assert len(items) == len(fixes) == len(assessment.blocks)
    for block, item, fix in zip(assessment.blocks, items, fixes, strict=True):
        finding = block.finding
        why = block.why.replace("`", "")
        assert shown(item.removeprefix("- ")) == f"{finding.table} — {finding.hazard.value}: {why} ({finding.origin})"
        assert shown(fix.removeprefix("  - ")) == f"Fix: {block.unblock.replace('`', '')}"


def test_markdown_blocked_items_without_an_assessment_are_the_plans_unsupported_changes() -> None:
    the_plan, _current, _assessment = full_review()
    lines = render_markdown(the_plan).splitlines()
    (unsupported,) = the_plan.blocked
    assert lines[lines.index("#### Blocked (1)") + 2 :][:2] == [
        f"- `shop.payments` — unsupported: {unsupported.reason} (`specs/shop/payments.yaml:8`)",
        "  - **Fix:** give those rows a value with `backfill: <SQL expression>` on the column "
        "(e.g. backfill: \"'unknown'\"), or add it as nullable (nullable: true)",
    ]


def test_markdown_has_one_collapsed_section_per_table_in_plan_order() -> None:
    markdown = markdown_of_full_review()
    assert [(m.group(1), m.group(2)) for m in SECTION.finditer(markdown)] == [
        ("sales.invoices", "create, 3 changes (specs/sales/invoices.yaml)"),
        ("shop.customers", "blocked, 4 changes, 3 blocked items"),
        ("shop.orders", "change, 17 changes"),
        ("shop.payments", "blocked, 5 changes, 5 blocked items"),
        ("shop.reviews", "no changes"),
    ]
    # Every <details> is HTML to the Markdown reader (none swallowed by a code block), and each closes.
    tags = "".join(t.content for t in GFM.parse(markdown) if t.type == "html_block")
    # The diagram, then 5 tables, 4 of them with SQL.
    assert tags.count("<details>") == markdown.count("<details>") == 10
    assert tags.count("</details>") == markdown.count("</details>") == 10
    assert "".join(sections(markdown).values()).count("<details>") == 9


def test_markdown_sections_hold_the_text_renderers_lines() -> None:
    the_plan, _current, assessment = full_review()
    text = render.render_text(the_plan, assessment)
    assert isinstance(text, Group)
    # Under their tables, indented: the changes, their hazards and data checks (sample rows too).
    expected = [p.plain.removeprefix("    ") for p in text.renderables if isinstance(p, Text) and p.plain[:1] == " "]
    found = [line for section in sections(markdown_of_full_review()).values() for line in fence(section, "diff")]
    assert found == expected
    # Without the indent of the table's lines under its header.
    assert "    sample rows:" in found
    assert "        sample rows:" not in found


def test_markdown_collapses_each_tables_sql_inside_its_section() -> None:
    the_plan, _current, _assessment = full_review()
    found = sections(markdown_of_full_review())
    total = 0
    for table_name, section in found.items():
        statements = [f"{sql};" for a in the_plan.actions_for(name(table_name)) for sql in ddl.to_sql(a)]
        total += len(statements)
        if not statements:
            assert "```sql" not in section
            continue
        # The SQL is a nested <details> after the table's changes, closed before the table's own.
        head, nested = section.split(f"\n<details><summary>SQL ({len(statements)} statement", 1)
        assert "```sql" not in head
        assert nested.endswith("```\n\n</details>\n\n</details>")
        assert "\n".join(fence(section, "sql")) == "\n".join(statements)
    schemas = [sql for a, sql in ddl.plan_statements(the_plan) if isinstance(a, CreateSchema)]
    assert total + len(schemas) == len(ddl.plan_statements(the_plan))
    # No SQL outside a section.
    outside = markdown_of_full_review().split("<details>", 1)[0]
    assert "```" not in outside


def test_markdown_of_many_tables_leaves_whole_tables_out_and_points_at_the_artifact() -> None:
    the_plan = many_tables(120)
    whole = render_markdown(the_plan, limit=10**9)
    out = render_markdown(the_plan, limit=20_000, artifact="delta-sync-plan-ci")
    assert utf16_size(out) <= 20_000 < utf16_size(whole)
    body, pointer = out.removesuffix("\n").rsplit("\n\n", 1)
    kept = len(SECTION.findall(out))
    assert 0 < kept < 120
    assert pointer == (
        f"**{120 - kept} of 120 tables left out** to stay within GitHub's comment size limit; "
        "the whole plan is in the plan artifact `delta-sync-plan-ci`."
    )
    # Cut at a table boundary: what is kept is the whole comment's beginning, the next table starts after it.
    assert whole.startswith(body + "\n\n<details><summary><code>warehouse.t")
    assert out.count("<details>") == out.count("</details>") == 2 * kept
    # No more left out than needed: one more table and the pointer would not fit.
    after = whole[len(body) + 2 :]
    following = after[: after.index("\n\n<details><summary><code>warehouse.t")]
    one_more = pointer.replace(f"**{120 - kept} of", f"**{120 - kept - 1} of")
    assert utf16_size(f"{body}\n\n{following}\n\n{one_more}\n") > 20_000


def test_markdown_size_limit_is_exact() -> None:
    the_plan = many_tables(10)
    whole = render_markdown(the_plan)
    assert render_markdown(the_plan, limit=len(whole)) == whole
    # The diagram goes first: it never costs a table's section.
    without = render_markdown(the_plan, limit=len(whole) - 1)
    assert "```mermaid" in whole
    assert "```mermaid" not in without
    assert "\n\n_No diagram: it would not fit within GitHub's comment size limit._\n\n" in without
    assert len(SECTION.findall(without)) == len(SECTION.findall(whole)) == 10
    assert render_markdown(the_plan, limit=len(without)) == without
    cut = render_markdown(the_plan, limit=len(without) - 1)
    assert len(cut) <= len(without) - 1
    assert cut.splitlines()[-1].endswith("the whole plan is in the saved plan file.")


def test_markdown_of_many_tables_fits_githubs_limit_by_default() -> None:
    out = render_markdown(many_tables(400))
    assert utf16_size(out) <= 65_000
    assert out.splitlines()[-1].endswith(
        "left out** to stay within GitHub's comment size limit; the whole plan is in the saved plan file."
    )


def test_markdown_counts_size_as_github_does() -> None:
    # An emoji is one character to Python and two to GitHub.
    the_plan = many_tables(60, columns=2, comment="🚀" * 200)
    out = render_markdown(the_plan, limit=30_000)
    assert utf16_size(out) <= 30_000
    assert len(SECTION.findall(out)) < 60


def test_markdown_keeps_summary_and_blocked_items_whatever_the_limit() -> None:
    the_plan, _current, assessment = full_review()
    lines = render_markdown(the_plan, assessment, limit=1).splitlines()
    assert lines[0].startswith("**delta-sync plan: 1 to create")
    assert f"#### Blocked ({len(assessment.blocks)})" in lines
    assert sum(line.startswith("  - **Fix:** ") for line in lines) == len(assessment.blocks)
    assert not any(line.startswith("<details>") for line in lines)
    assert lines[-1].startswith("**5 of 5 tables left out**")


def test_markdown_escapes_what_markdown_and_html_would_read() -> None:
    reason = "a | b <img src=x onerror=alert(1)> `c|d` *e* ~~f~~ g_h_ [l](http://x) \\ &amp; stray ` tick"
    remedy = "use `backfill: <SQL expression>` or <b>not</b>"
    blocked = Unsupported(name("s.odd"), "note", reason, remedy, Origin("specs/<odd>&.yaml", 3))
    created = dataclasses.replace(
        table("s.new", column("id", "bigint"), comment="x ``` </details> y"), origin=Origin("specs/a<b>&c.yaml", 1)
    )
    the_plan = Plan((blocked, CreateTable(created)), (name("s.new"), name("s.odd")))
    markdown = render_markdown(the_plan, artifact="plan`s ``x``.json", limit=1)
    item = next(line for line in markdown.splitlines() if line.startswith("- `s.odd`"))
    rendered_html = GFM.render(item)
    for markup in ("<img", "<em>", "<s>", "<del>", "<a ", "<b>"):
        assert markup not in rendered_html
    assert "<code>c|d</code>" in rendered_html
    assert (
        shown(item.removeprefix("- ")) == f"s.odd — unsupported: {reason.replace('`c|d`', 'c|d')} (specs/<odd>&.yaml:3)"
    )
    fix = next(line for line in markdown.splitlines() if line.startswith("  - **Fix:**"))
    assert "<code>backfill: &lt;SQL expression&gt;</code>" in GFM.render(fix)
    assert shown(fix.removeprefix("  - ")) == "Fix: use backfill: <SQL expression> or <b>not</b>"
    # Backticks inside inline code: a longer run of them delimits it.
    assert "<code>plan`s ``x``.json</code>" in GFM.render(markdown.splitlines()[-1])
    # In the HTML of <summary>, HTML escapes; a code block no line of it can close.
    whole = render_markdown(the_plan)
    assert "<summary><code>s.new</code>: create, 1 change (specs/a&lt;b&gt;&amp;c.yaml)</summary>" in whole
    section = sections(whole)["s.new"]
    assert '+ comment "x ``` </details> y"' in fence(section, "diff")
    assert "COMMENT 'x ``` </details> y';" in fence(section, "sql")
    assert "\n````diff\n" in section
    tags = "".join(t.content for t in GFM.parse(whole) if t.type == "html_block")
    assert tags.count("<details>") == tags.count("</details>") == 4  # the diagram; s.odd has no SQL


def test_markdown_of_an_empty_plan_is_the_no_changes_summary() -> None:
    t = table("s.t", column("id", "bigint"))
    u = table("s.u", column("id", "bigint"))
    assert render_markdown(plan(state(t, u), state(t, u))) == (
        "**delta-sync plan: No changes.** 2 table(s) match the specs.\n"
    )
    # Only notices: nothing to apply, nothing more to say.
    notices = plan(state(live(table("s.r", column("Stars", "int")))), state(table("s.r", column("stars", "int"))))
    assert notices.actions
    assert all(isinstance(a, Notice) for a in notices.actions)
    assert render_markdown(notices, assess(notices, state(), (), ())) == (
        "**delta-sync plan: No changes.** 1 table(s) match the specs.\n"
    )

from __future__ import annotations

import dataclasses
import io
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from unittest.mock import ANY

import pytest
from rich.console import Console, Group, RenderableType
from rich.text import Text
from typer.testing import CliRunner, Result

from delta_sync.cli import main as cli
from delta_sync.model.errors import SpecProblem
from delta_sync.model.state import CatalogState, Check, Origin, SchemaName, TableName, View
from delta_sync.planning.actions import (
    AddCheck,
    AddColumns,
    Backfill,
    Conversion,
    Plan,
    RewriteTable,
    SetColumnComment,
    SetTableComment,
    Unsupported,
)
from delta_sync.planning.diff.planner import plan
from delta_sync.render import text as render
from delta_sync.render.actions import _action_lines
from delta_sync.render.counts import objects, objects_match, objects_of, views_changed, views_of
from delta_sync.render.document import action_json, plan_json
from delta_sync.render.markdown import render_markdown
from delta_sync.review import environments
from delta_sync.specs.spec_files import load_specs
from tests.unit.builders import WithoutViews, col, name, state, table


def text_of(renderable: RenderableType) -> str:
    buffer = io.StringIO()
    console = Console(width=100, file=buffer, color_system=None, theme=render.THEME)
    console.print(renderable)
    return buffer.getvalue()


def lines_of(renderable: RenderableType) -> list[str]:
    # Rich pads a wrapped line with trailing spaces; they carry no meaning.
    return [line.rstrip() for line in text_of(renderable).splitlines()]


def rich_plan() -> Plan:
    """A create (in a new schema), a change of every top-level kind, a blocked table (a type change
    Delta cannot make in place, on a table delta-sync cannot rewrite), a table with only a notice and
    an unchanged one."""
    created = table(
        "sales.invoices",
        col("id", "bigint", nullable=False, comment="Invoice number"),
        col("amount", "decimal(18,2)"),
        comment="Invoices",
        partitioned_by=["id"],
        properties={"delta.appendOnly": "true"},
        checks={"positive": "amount >= 0"},
        origin=Origin("specs/sales/invoices.yaml", 1),
    )
    have = table(
        "shop.orders",
        col("order_id", "bigint", nullable=False, comment="Surrogate key"),
        col("status", "string"),
        col("cust", "bigint"),
        col("qty", "int", nullable=False),
        col("legacy", "int"),
        col("channel", "string"),
        comment="Orders",
        checks={"known_status": "status IN ( 'new' , 'paid' )", "by_hand": "order_id > 0"},
        properties={"delta.appendOnly": "false", "owner.team": "crm", "owner.ticket": "T-1"},
    )
    want = dataclasses.replace(
        table(
            "shop.orders",
            col("order_id", "bigint", nullable=False, comment="Primary key"),
            col("status", "string", nullable=False),
            dataclasses.replace(col("customer_id", "bigint"), renamed_from="cust"),
            col("qty", "bigint", origin=Origin("specs/shop/orders.yaml", 9)),
            dataclasses.replace(col("channel", "string"), default="'web'"),
            col("note", "string", comment="Free text"),
            col("placed_at", "timestamp"),
            comment=None,
            checks={"known_status": "status IN ('new', 'paid', 'shipped')"},
            properties={
                "delta.appendOnly": "false",
                "owner.team": "billing",
                "delta.enableChangeDataFeed": "true",
            },
            origin=Origin("specs/shop/orders.yaml", 1),
        ),
        clustered_by=("order_id",),
        removed_properties=("owner.ticket",),
    )
    customers_have = table(
        "shop.customers",
        col("id", "bigint"),
        properties={"delta.enableChangeDataFeed": "true", "delta.columnMapping.mode": "name"},
    )
    customers_want = table(
        "shop.customers",
        col("id", "int", origin=Origin("specs/shop/customers.yaml", 4)),
        origin=Origin("specs/shop/customers.yaml", 1),
    )
    products = table("shop.products", col("id"))
    reviews_have = table("shop.reviews", col("Stars", "int"))
    reviews_want = table("shop.reviews", col("stars", "int", origin=Origin("specs/shop/reviews.yaml", 3)))
    return plan(
        state(have, customers_have, products, reviews_have),
        state(created, want, customers_want, products, reviews_want),
    )


# Rich wraps at the console's 100 columns; a wrapped line goes on at the left margin.
GOLDEN = """\
+ create schema sales
+ create table sales.invoices  (specs/sales/invoices.yaml)
    + id bigint NOT NULL  -- Invoice number
    + amount decimal(18,2)
    + partitioned by (id)
    + comment "Invoices"
    + property delta.appendOnly = "true"
    + check positive: amount >= 0
! blocked shop.customers
    ! `id` changes type bigint -> int, which Delta cannot do in place  (specs/shop/customers.yaml:4)
        fix: delta-sync cannot rewrite this table: it has change data feed and column mapping on,
and Delta refuses REPLACE TABLE ... AS SELECT on such a table
(DELTA_BLOCK_COLUMN_MAPPING_AND_CDC_OPERATION); turn change data feed off
(delta.enableChangeDataFeed: "false") for the apply that rewrites it; keep `type: bigint`
~ change table shop.orders
    + check ds_nn_status: `status` IS NOT NULL  (enforces NOT NULL)
    + enable delta.columnMapping.mode = "name"  (renaming `cust` needs column mapping; cannot be
undone simply)
    + enable delta.enableTypeWidening = "true"  (widening `qty` to bigint needs type widening;
cannot be undone simply)
    + enable delta.feature.allowColumnDefaults = "supported"  (the default of `channel` needs column
defaults; cannot be undone simply)
    - check by_hand: order_id > 0
    ~ rename column cust -> customer_id
    - column legacy int
    ~ column qty type: int -> bigint
    ~ column qty: NOT NULL -> nullable
    + column note string  -- Free text
    + column placed_at timestamp
    ~ column channel default: (none) -> 'web'
    + property delta.enableChangeDataFeed = "true"
    ~ property owner.team: "crm" -> "billing"
    - property owner.ticket (was "T-1")
    ~ clustered by: (none) -> (order_id)
    ~ comment: "Orders" -> (none)
    ~ column order_id comment: "Surrogate key" -> "Primary key"
    ~ check known_status: status IN ( 'new' , 'paid' ) -> status IN ('new', 'paid', 'shipped')
# shop.reviews: no changes
    # column `Stars` is spelled `stars` in the spec; Spark names are case-insensitive, so nothing
changes (Delta cannot change only the case of a name: keep the table's spelling, or rename through
another name over two applies)
Plan: 1 to create, 1 to change, 2 unchanged, 1 blocked."""


def test_render_text_golden() -> None:
    assert lines_of(render.render_text(rich_plan())) == GOLDEN.splitlines()


def test_replaced_check_shows_once_and_its_drop_is_hidden() -> None:
    out = text_of(render.render_text(rich_plan()))
    assert out.count("known_status") == 1
    assert "- check known_status" not in out


def test_summary_line() -> None:
    summary = render.render_summary(rich_plan())
    assert summary.plain == "Plan: 1 to create, 1 to change, 2 unchanged, 1 blocked."
    assert summary.style == "ds.blocked"


def test_summary_line_without_blocked_items() -> None:
    have = table("s.t", col("id"))
    want = table("s.t", col("id"), comment="new")
    summary = render.render_summary(plan(state(have), state(want)))
    assert summary.plain == "Plan: 0 to create, 1 to change, 0 unchanged."
    assert summary.style == "ds.table"


def test_empty_plan_says_no_changes() -> None:
    t = table("s.t", col("id"))
    u = table("s.u", col("id"))
    empty = plan(state(t, u), state(t, u))
    assert text_of(render.render_text(empty)) == "No changes. 2 table(s) match the specs.\n"
    assert render.render_summary(empty).style == "ds.ok"


def test_header_styles() -> None:
    group = render.render_text(rich_plan())
    assert isinstance(group, Group)
    headers = {
        r.plain: [(s.start, s.end, str(s.style)) for s in r.spans]
        for r in group.renderables
        if isinstance(r, Text) and not r.plain.startswith(" ")
    }
    assert headers["+ create table sales.invoices  (specs/sales/invoices.yaml)"] == [
        (0, 15, "ds.create"),
        (15, 29, "ds.table"),
        (29, 58, "ds.muted"),
    ]
    assert headers["! blocked shop.customers"] == [(0, 10, "ds.blocked"), (10, 24, "ds.table")]
    assert headers["~ change table shop.orders"] == [(0, 15, "ds.change"), (15, 26, "ds.table")]
    assert headers["+ create schema sales"] == [(0, 2, "ds.create")]
    assert headers["# shop.reviews: no changes"] == [(0, 2, "ds.muted")]
    assert "shop.products" not in " ".join(headers)


@pytest.mark.parametrize(
    ("value", "shown"),
    [(None, "(none)"), ("x", '"x"'), ("", '""'), ("a\nb", "'a\\nb'")],
)
def test_value_display(value: str | None, shown: str) -> None:
    t = name("s.t")
    action = SetTableComment(t, value, "after")
    (line,) = _action_lines(action)
    assert line.plain == f'    ~ comment: {shown} -> "after"'


def test_unsupported_without_origin() -> None:
    action = Unsupported(name("s.t"), "id", "the reason", "the remedy")
    assert [line.plain for line in _action_lines(action)] == [
        "    ! the reason",
        "        fix: the remedy",
    ]


def test_rewrite_lines_show_the_conversions_the_layout_and_what_is_kept() -> None:
    rewrite = RewriteTable(
        name("s.t"),
        ("id", "code", "d"),
        (Conversion("code", "string", "int", "CAST(`code` AS int)"),),
        partitioned_by=("d",),
        clustered_by=(),
        comment="T",
        properties=(("owner.team", "crm"),),
        checks=(Check("ds_nn_id", "`id` IS NOT NULL"), Check("pos", "id > 0")),
        reasons=("why",),
        restore_version=7,
    )
    assert lines_of(Group(*_action_lines(rewrite))) == [
        "    ~ rewrite the table: one REPLACE TABLE ... AS SELECT, restore point version 7",
        "      ~ column code type: string -> int as CAST(`code` AS int)",
        "        partitioned by: (d)",
        "        keeps every row, its properties, comment and checks (ds_nn_id, pos)",
    ]
    unread = dataclasses.replace(rewrite, conversions=(), partitioned_by=(), clustered_by=("id",), checks=())
    unread = dataclasses.replace(unread, restore_version=None)
    assert lines_of(Group(*_action_lines(unread))) == [
        "    ~ rewrite the table: one REPLACE TABLE ... AS SELECT",
        "        clustered by: (id)",
        "        keeps every row, its properties, comment and checks (none)",
    ]


def test_backfill_line() -> None:
    backfill = Backfill(name("s.t"), "status", "'new'", "string")
    assert lines_of(Group(*_action_lines(backfill))) == [
        "    ~ column status: backfill rows where it is NULL with 'new'"
    ]


def test_rewrite_and_backfill_json() -> None:
    rewrite = RewriteTable(
        name("s.t"),
        ("id", "code"),
        (Conversion("code", "string", "int", "CAST(`code` AS int)"),),
        partitioned_by=(),
        clustered_by=("id",),
        comment=None,
        properties=(),
        checks=(Check("ds_nn_id", "`id` IS NOT NULL"),),
        reasons=("`code` changes type string -> int (by CAST to int): Delta cannot do it in place",),
        restore_version=3,
        num_files=2,
        size_bytes=4096,
    )
    assert action_json(rewrite) == {
        "kind": "RewriteTable",
        "table": "s.t",
        "conversions": [{"column": "code", "before": "string", "after": "int", "expression": "CAST(`code` AS int)"}],
        "partitioned_by": [],
        "clustered_by": ["id"],
        "checks": ["ds_nn_id"],
        "reasons": ["`code` changes type string -> int (by CAST to int): Delta cannot do it in place"],
        "restore_version": 3,
        "num_files": 2,
        "size_bytes": 4096,
        "sql": [
            "REPLACE TABLE `s`.`t` USING DELTA\n"
            "CLUSTER BY (`id`)\n"
            "TBLPROPERTIES ('delta.constraints.ds_nn_id' = '`id` IS NOT NULL')\n"
            "AS SELECT `id`, CAST(`code` AS int) AS `code`\n"
            "FROM `s`.`t`"
        ],
    }
    assert action_json(Backfill(name("s.t"), "status", "'new'", "string")) == {
        "kind": "Backfill",
        "table": "s.t",
        "column": "status",
        "expression": "'new'",
        "type": "string",
        "sql": ["UPDATE `s`.`t` SET `status` = ('new') WHERE `status` IS NULL"],
    }


def test_multiline_column_comment_stays_on_one_line() -> None:
    t = name("s.t")
    action = AddColumns(t, (col("note", "string", comment="line1\nline2"),))
    assert lines_of(Group(*_action_lines(action))) == ["    + column note string  -- 'line1\\nline2'"]


# --- JSON -----------------------------------------------------------------------------------------


def test_plan_json_top_level_and_json_dumpable() -> None:
    data = plan_json(rich_plan())
    assert json.loads(json.dumps(data)) == data
    assert data["format_version"] == 1
    assert data["summary"] == {"create": 1, "change": 1, "unchanged": 2, "blocked": 1, "drop": 0}
    assert data["tables"] == [
        "sales.invoices",
        "shop.customers",
        "shop.orders",
        "shop.products",
        "shop.reviews",
    ]
    assert [(a["kind"], a.get("table", a.get("schema"))) for a in data["actions"]] == [
        ("CreateSchema", "sales"),
        ("CreateTable", "sales.invoices"),
        ("AddCheck", "sales.invoices"),
        ("Unsupported", "shop.customers"),
        # The new NOT NULL rule reads a column the plan leaves alone: its ADD CONSTRAINT goes first.
        ("AddCheck", "shop.orders"),
        ("EnableFeature", "shop.orders"),
        ("EnableFeature", "shop.orders"),
        ("EnableFeature", "shop.orders"),
        # The text hides a replaced check's drop; JSON keeps every action.
        ("DropCheck", "shop.orders"),
        ("DropCheck", "shop.orders"),
        ("RenameColumn", "shop.orders"),
        ("DropColumns", "shop.orders"),
        ("AlterColumnType", "shop.orders"),
        ("DropNotNull", "shop.orders"),
        ("AddColumns", "shop.orders"),
        ("SetDefault", "shop.orders"),
        ("SetProperties", "shop.orders"),
        ("UnsetProperties", "shop.orders"),
        ("ClusterBy", "shop.orders"),
        ("SetTableComment", "shop.orders"),
        ("SetColumnComment", "shop.orders"),
        ("AddCheck", "shop.orders"),
        ("Notice", "shop.reviews"),
    ]
    assert all(isinstance(a["sql"], list) for a in data["actions"])


def actions_by_kind(kind: str) -> list[dict[str, Any]]:
    return [a for a in plan_json(rich_plan())["actions"] if a["kind"] == kind]


def test_plan_json_create_schema_and_table() -> None:
    assert actions_by_kind("CreateSchema") == [
        {"kind": "CreateSchema", "schema": "sales", "sql": ["CREATE SCHEMA IF NOT EXISTS `sales`"]}
    ]
    assert actions_by_kind("CreateTable") == [
        {
            "kind": "CreateTable",
            "table": "sales.invoices",
            "columns": [
                {"name": "id", "type": "bigint", "nullable": False, "comment": "Invoice number"},
                {"name": "amount", "type": "decimal(18,2)", "nullable": True, "comment": None},
            ],
            "comment": "Invoices",
            "partitioned_by": ["id"],
            "clustered_by": [],
            "properties": {"delta.appendOnly": "true"},
            "origin": {"file": "specs/sales/invoices.yaml", "line": 1},
            "sql": [
                "CREATE TABLE `sales`.`invoices` (\n"
                "  `id` bigint NOT NULL COMMENT 'Invoice number',\n"
                "  `amount` decimal(18,2)\n"
                ") USING DELTA\n"
                "PARTITIONED BY (`id`)\n"
                "COMMENT 'Invoices'\n"
                "TBLPROPERTIES ('delta.appendOnly' = 'true')"
            ],
        }
    ]


def test_plan_json_change_actions() -> None:
    assert actions_by_kind("Unsupported") == [
        {
            "kind": "Unsupported",
            "table": "shop.customers",
            "subject": "id",
            "reason": "`id` changes type bigint -> int, which Delta cannot do in place",
            "remedy": "delta-sync cannot rewrite this table: it has change data feed and column mapping on, and "
            "Delta refuses REPLACE TABLE ... AS SELECT on such a table (DELTA_BLOCK_COLUMN_MAPPING_AND_CDC_OPERATION); "
            'turn change data feed off (delta.enableChangeDataFeed: "false") for the apply that rewrites it; '
            "keep `type: bigint`",
            "origin": {"file": "specs/shop/customers.yaml", "line": 4},
            "sql": [],
        }
    ]
    assert actions_by_kind("AddColumns") == [
        {
            "kind": "AddColumns",
            "parent": [],
            "table": "shop.orders",
            "columns": [
                {"name": "note", "type": "string", "nullable": True, "comment": "Free text"},
                {"name": "placed_at", "type": "timestamp", "nullable": True, "comment": None},
            ],
            "sql": [
                "ALTER TABLE `shop`.`orders` ADD COLUMNS (`note` string COMMENT 'Free text', `placed_at` timestamp)"
            ],
        }
    ]
    assert actions_by_kind("SetProperties") == [
        {
            "kind": "SetProperties",
            "table": "shop.orders",
            "changes": [
                {"key": "delta.enableChangeDataFeed", "before": None, "after": "true"},
                {"key": "owner.team", "before": "crm", "after": "billing"},
            ],
            "origin": {"file": "specs/shop/orders.yaml", "line": 1},
            "sql": [
                "ALTER TABLE `shop`.`orders` SET TBLPROPERTIES "
                "('delta.enableChangeDataFeed' = 'true', 'owner.team' = 'billing')"
            ],
        }
    ]
    assert actions_by_kind("SetTableComment") == [
        {
            "kind": "SetTableComment",
            "table": "shop.orders",
            "before": "Orders",
            "after": None,
            "origin": {"file": "specs/shop/orders.yaml", "line": 1},
            "sql": ["COMMENT ON TABLE `shop`.`orders` IS NULL"],
        }
    ]
    assert actions_by_kind("SetColumnComment") == [
        {
            "kind": "SetColumnComment",
            "parent": [],
            "table": "shop.orders",
            "column": "order_id",
            "before": "Surrogate key",
            "after": "Primary key",
            "sql": ["ALTER TABLE `shop`.`orders` ALTER COLUMN `order_id` COMMENT 'Primary key'"],
        }
    ]
    assert actions_by_kind("DropCheck") == [
        {
            "kind": "DropCheck",
            "table": "shop.orders",
            "check": "by_hand",
            "expression": "order_id > 0",
            "sql": ["ALTER TABLE `shop`.`orders` DROP CONSTRAINT by_hand"],
        },
        {
            "kind": "DropCheck",
            "table": "shop.orders",
            "check": "known_status",
            "expression": "status IN ( 'new' , 'paid' )",
            "sql": ["ALTER TABLE `shop`.`orders` DROP CONSTRAINT known_status"],
        },
    ]
    assert actions_by_kind("AddCheck")[1] == {
        "kind": "AddCheck",
        "table": "shop.orders",
        "check": "ds_nn_status",
        "expression": "`status` IS NOT NULL",
        "sql": ["ALTER TABLE `shop`.`orders` ADD CONSTRAINT ds_nn_status CHECK (`status` IS NOT NULL)"],
    }
    assert actions_by_kind("AddCheck")[2] == {
        "kind": "AddCheck",
        "table": "shop.orders",
        "check": "known_status",
        "expression": "status IN ('new', 'paid', 'shipped')",
        "replaces": "status IN ( 'new' , 'paid' )",
        "sql": ["ALTER TABLE `shop`.`orders` ADD CONSTRAINT known_status CHECK (status IN ('new', 'paid', 'shipped'))"],
    }
    assert "replaces" not in actions_by_kind("AddCheck")[0]


ORDERS = "ALTER TABLE `shop`.`orders`"
ORDERS_FILE = {"file": "specs/shop/orders.yaml", "line": 1}


def test_plan_json_new_change_actions() -> None:
    assert actions_by_kind("EnableFeature") == [
        {
            "kind": "EnableFeature",
            "table": "shop.orders",
            "key": key,
            "value": value,
            "reason": reason,
            "origin": {"file": "specs/shop/orders.yaml", "line": ANY},
            "sql": [f"{ORDERS} SET TBLPROPERTIES ('{key}' = '{value}')"],
        }
        for key, value, reason in [
            ("delta.columnMapping.mode", "name", "renaming `cust` needs column mapping"),
            ("delta.enableTypeWidening", "true", "widening `qty` to bigint needs type widening"),
            ("delta.feature.allowColumnDefaults", "supported", "the default of `channel` needs column defaults"),
        ]
    ]
    assert actions_by_kind("RenameColumn") == [
        {
            "kind": "RenameColumn",
            "table": "shop.orders",
            "before": "cust",
            "after": "customer_id",
            "sql": [f"{ORDERS} RENAME COLUMN `cust` TO `customer_id`"],
        }
    ]
    assert actions_by_kind("DropColumns") == [
        {
            "kind": "DropColumns",
            "parent": [],
            "table": "shop.orders",
            "columns": [{"name": "legacy", "type": "int", "nullable": True, "comment": None}],
            "origin": ORDERS_FILE,
            "sql": [f"{ORDERS} DROP COLUMNS (`legacy`)"],
        }
    ]
    qty_origin = {"file": "specs/shop/orders.yaml", "line": 9}
    assert actions_by_kind("AlterColumnType") == [
        {
            "kind": "AlterColumnType",
            "parent": [],
            "table": "shop.orders",
            "column": "qty",
            "before": "int",
            "after": "bigint",
            "origin": qty_origin,
            "sql": [f"{ORDERS} ALTER COLUMN `qty` TYPE bigint"],
        }
    ]
    assert actions_by_kind("DropNotNull") == [
        {
            "kind": "DropNotNull",
            "parent": [],
            "table": "shop.orders",
            "column": "qty",
            "origin": qty_origin,
            "sql": [f"{ORDERS} ALTER COLUMN `qty` DROP NOT NULL"],
        }
    ]
    assert actions_by_kind("SetDefault") == [
        {
            "kind": "SetDefault",
            "table": "shop.orders",
            "column": "channel",
            "before": None,
            "after": "'web'",
            "sql": [f"{ORDERS} ALTER COLUMN `channel` SET DEFAULT 'web'"],
        }
    ]
    assert actions_by_kind("UnsetProperties") == [
        {
            "kind": "UnsetProperties",
            "table": "shop.orders",
            "removed": [{"key": "owner.ticket", "before": "T-1"}],
            "origin": ORDERS_FILE,
            "sql": [f"{ORDERS} UNSET TBLPROPERTIES ('owner.ticket')"],
        }
    ]
    assert actions_by_kind("ClusterBy") == [
        {
            "kind": "ClusterBy",
            "table": "shop.orders",
            "before": [],
            "after": ["order_id"],
            "origin": ORDERS_FILE,
            "sql": [f"{ORDERS} CLUSTER BY (`order_id`)"],
        }
    ]
    assert actions_by_kind("Notice") == [
        {
            "kind": "Notice",
            "table": "shop.reviews",
            "subject": "stars",
            "message": "column `Stars` is spelled `stars` in the spec; Spark names are case-insensitive, so "
            "nothing changes (Delta cannot change only the case of a name: keep the table's spelling, "
            "or rename through another name over two applies)",
            "origin": {"file": "specs/shop/reviews.yaml", "line": 3},
            "sql": [],
        }
    ]


def test_plan_json_of_empty_plan() -> None:
    t = table("s.t", col("id"))
    assert plan_json(plan(state(t), state(t))) == {
        "format_version": 1,
        "summary": {"create": 0, "change": 0, "unchanged": 1, "blocked": 0, "drop": 0},
        "tables": ["s.t"],
        "unmanaged": [],
        "unordered": [],
        "actions": [],
        # Protocol changes and data probes come with a hazard assessment; a bare plan has none.
        "protocols": [],
        "probes": [],
    }


def test_action_json_origin_comes_from_the_action_not_the_check() -> None:
    origin = Origin("specs/t.yaml", 7)
    action = SetColumnComment(name("s.t"), "id", None, "x", origin)
    assert action_json(action)["origin"] == {"file": "specs/t.yaml", "line": 7}
    check = AddCheck(name("s.t"), Check("c", "a > 0", origin=origin))
    assert "origin" not in action_json(check)


# --- nested changes -------------------------------------------------------------------------------


def nested_plan() -> Plan:
    have = table(
        "s.t",
        col("s", "struct<a:int NOT NULL,b:string,c:int>"),
        col("arr", "array<int>"),
        col("m", "map<string,int>"),
        properties={"delta.columnMapping.mode": "name", "delta.enableTypeWidening": "true"},
    )
    want = table(
        "s.t",
        col("s", "struct<a:int,b:string COMMENT 'x',d:int>"),
        col("arr", "array<bigint>"),
        col("m", "map<string,bigint>"),
        properties={"delta.columnMapping.mode": "name", "delta.enableTypeWidening": "true"},
    )
    return plan(state(have), state(want))


def test_nested_changes_plan_nested_statements() -> None:
    assert [statement for a in plan_json(nested_plan())["actions"] for statement in a["sql"]] == [
        "ALTER TABLE `s`.`t` DROP COLUMNS (`s`.`c`)",
        "ALTER TABLE `s`.`t` ALTER COLUMN `arr`.`element` TYPE bigint",
        "ALTER TABLE `s`.`t` ALTER COLUMN `m`.`value` TYPE bigint",
        "ALTER TABLE `s`.`t` ALTER COLUMN `s`.`a` DROP NOT NULL",
        "ALTER TABLE `s`.`t` ADD COLUMNS (`s`.`d` int)",
        "ALTER TABLE `s`.`t` ALTER COLUMN `s`.`b` COMMENT 'x'",
    ]


def test_nested_changes_show_their_path() -> None:
    assert lines_of(render.render_text(nested_plan())) == [
        "~ change table s.t",
        "    - column s.c int",
        "    ~ column arr.element type: int -> bigint",
        "    ~ column m.value type: int -> bigint",
        "    ~ column s.a: NOT NULL -> nullable",
        "    + column s.d int",
        '    ~ column s.b comment: (none) -> "x"',
        "Plan: 0 to create, 1 to change, 0 unchanged.",
    ]


def test_nested_changes_json_has_the_parent() -> None:
    actions = plan_json(nested_plan())["actions"]
    assert [(a["kind"], a.get("parent")) for a in actions] == [
        ("DropColumns", ["s"]),
        ("AlterColumnType", ["arr"]),
        ("AlterColumnType", ["m"]),
        ("DropNotNull", ["s"]),
        ("AddColumns", ["s"]),
        ("SetColumnComment", ["s"]),
    ]


# --- counts of tables and views -------------------------------------------------------------------------


def test_counts_name_views_apart_from_tables() -> None:
    assert objects(4) == "4 table(s)"  # a plan without views reads as it always did
    assert objects(2, 1) == "2 table(s) and 1 view"
    assert objects(0, 2) == "2 views"
    assert objects_match(4, 0, "the specs") == "4 table(s) match the specs"
    assert objects_match(0, 1, "the specs") == "1 view matches the specs"
    assert objects_of(["s.t", "s.v", "s.v", name("s.u")], {name("s.v"), name("s.w")}) == "2 table(s) and 1 view"


def with_views(catalog: CatalogState, *views: View, dropped: Mapping[TableName, Origin] | None = None) -> CatalogState:
    return dataclasses.replace(catalog, views={v.name: v for v in views}, dropped=dict(dropped or {}))


def test_an_empty_plan_counts_its_views_apart() -> None:
    t, u = table("s.t", col("id")), table("s.u", col("id"))
    v = View(name("s.v"), "SELECT id FROM s.t")
    desired = with_views(state(t, u), v)
    empty = plan(with_views(state(t, u), v), desired)
    assert empty.is_empty

    views = views_of(empty, desired)

    assert views == {v.name}
    assert text_of(render.render_text(empty, views=views)) == "No changes. 2 table(s) and 1 view match the specs.\n"
    assert render_markdown(empty, views=views) == (
        "**delta-sync plan: No changes.** 2 table(s) and 1 view match the specs.\n"
    )


def test_views_of_a_plan_as_made_and_as_saved() -> None:
    t, gone = table("s.t", col("id")), table("s.gone", col("id"))
    kept, new, old = (View(name(f"s.{n}"), "SELECT id FROM s.t") for n in ("kept", "new", "old"))
    origin = Origin("specs/s/x.yaml", 1)
    desired = dataclasses.replace(
        with_views(state(t), kept, new, dropped={gone.name: origin, old.name: origin}),
        dropped_views=frozenset({old.name}),
    )
    current = with_views(state(t, gone), kept, old)
    made = plan(current, desired)
    # A view left alone, one created, one dropped; a table kept, one dropped.
    assert set(made.tables) == {t.name, gone.name, kept.name, new.name, old.name}

    assert views_of(made, desired) == {kept.name, new.name, old.name}
    # A saved plan's desired state holds its tables only: the same answer.
    assert views_of(made, state(t)) == {kept.name, new.name, old.name}
    assert views_changed(made.actions) == {new.name, old.name}


# The CLI's counts, on a fake catalog: one table and one view.
ORDERS_SPEC = "table: s.orders\ncomment: Orders\ncolumns:\n  - {name: id, type: bigint}\n"
OPEN_ORDERS_SPEC = "view: s.open_orders\nsql: SELECT id FROM s.orders\n"


class Catalog(WithoutViews):
    """Serves `state`, and after any statement `after` (what apply makes)."""

    def __init__(self, state: CatalogState, after: CatalogState) -> None:
        self.state, self.after = state, after

    def read(self, names: object) -> CatalogState:
        return self.state

    def list_tables(self, schema: SchemaName) -> list[TableName]:
        return sorted(self.state.tables)

    def check_problems(self, work: object) -> list[SpecProblem]:
        return []

    def statement_problems(self, statements: object) -> list[str]:
        return []

    def execute(self, statement: str, metadata: str | None = None) -> None:
        self.state = self.after


def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> CatalogState:
    """The specs (a table and a view over it) in a project at `tmp_path`; the catalog that matches them."""
    folder = tmp_path / "specs"
    folder.mkdir()
    (folder / "orders.yaml").write_text(ORDERS_SPEC)
    (folder / "open_orders.yaml").write_text(OPEN_ORDERS_SPEC)
    monkeypatch.chdir(tmp_path)
    desired = load_specs(folder)
    return CatalogState(dict(desired.tables), frozenset({SchemaName(None, "s")}), views=dict(desired.views))


def run(monkeypatch: pytest.MonkeyPatch, catalog: Catalog, *args: str) -> Result:
    monkeypatch.setattr(environments, "open_catalog", lambda env=None, on_status=None: catalog)
    return CliRunner().invoke(cli.app, list(args), env={"COLUMNS": "200"})


def test_the_cli_counts_a_plan_without_changes_in_tables_and_views(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    matching = project(tmp_path, monkeypatch)
    line = "No changes. 1 table(s) and 1 view match the specs."

    for args in (["plan", "specs"], ["plan", "specs", "--out", "plan.json"], ["apply", "specs", "--yes"]):
        done = run(monkeypatch, Catalog(matching, matching), *args)
        assert done.exit_code == 0, done.output
        assert f"{line}\n" in done.stdout, args
    markdown = run(monkeypatch, Catalog(matching, matching), "plan", "specs", "--format", "markdown")
    assert markdown.stdout == f"**delta-sync plan: No changes.** {line.removeprefix('No changes. ')}\n"
    shown = run(monkeypatch, Catalog(matching, matching), "show", "plan.json")
    assert shown.exit_code == 0, shown.output
    assert shown.stdout == f"{line}\n"


def test_the_cli_counts_what_apply_changed_in_tables_and_views(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    matching = project(tmp_path, monkeypatch)
    orders = matching.tables[name("s.orders")]
    # The table's comment differs, the view is missing: a change of each.
    before = dataclasses.replace(matching, tables={orders.name: dataclasses.replace(orders, comment="Old")}, views={})

    applied = run(monkeypatch, Catalog(before, matching), "apply", "specs", "--yes")
    assert applied.exit_code == 0, applied.output
    assert "; all 1 table(s) and 1 view match the specs." in applied.stderr

    assert run(monkeypatch, Catalog(before, matching), "plan", "specs", "--out", "plan.json").exit_code == 0
    saved = run(monkeypatch, Catalog(before, matching), "apply", "plan.json", "--yes")
    assert saved.exit_code == 0, saved.output
    assert "2 statement(s) on 1 table(s) and 1 view:" in saved.stderr
    # What a saved plan's apply re-reads and confirms: its tables.
    assert "re-read: 1 table(s) match the plan." in saved.stderr

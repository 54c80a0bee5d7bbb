"""A CHECK over a column the plan retypes is dropped and re-added unchanged; the plan says why
(Delta refuses to retype a column a CHECK reads) instead of showing `X -> X`."""

from __future__ import annotations

import io

from rich.console import Console

from delta_sync.planning.actions import AddCheck, Plan
from delta_sync.planning.diff.planner import plan
from delta_sync.render import text as render
from delta_sync.render.document import action_json
from delta_sync.render.markdown import render_markdown
from tests.unit.builders import col, state, table

WHY = "dropped and re-added unchanged around the change of `amount`: Delta refuses to retype or drop"
STORED = "amount >= '0'::decimal(12, 2)"


def _widening() -> Plan:
    have = table("shop.orders", col("amount", "decimal(12,2)"), checks={"amount_positive": STORED})
    # The spec holds the form import writes; the table, another engine's.
    want = table(
        "shop.orders",
        col("amount", "decimal(14,2)"),
        checks={"amount_positive": "amount >= CAST('0' AS DECIMAL(12, 2))"},
    )
    return plan(state(have), state(want))


def test_the_plan_says_why_an_unchanged_check_moves() -> None:
    (added,) = [a for a in _widening().actions if isinstance(a, AddCheck)]
    assert added.moved_for is not None
    assert added.moved_for.startswith(WHY)


def test_text_and_markdown_show_the_reason_not_x_to_x() -> None:
    buffer = io.StringIO()
    Console(width=200, file=buffer, color_system=None, theme=render.THEME).print(render.render_text(_widening()))
    for out in (buffer.getvalue(), render_markdown(_widening())):
        assert f"check amount_positive: {WHY}" in out
        assert "->" not in out.split("amount_positive", 1)[1].splitlines()[0]


def test_json_carries_the_reason() -> None:
    (added,) = [action_json(a) for a in _widening().actions if isinstance(a, AddCheck)]
    assert str(added["moved_for"]).startswith(WHY)


def test_a_changed_check_still_shows_before_and_after() -> None:
    have = table("shop.orders", col("amount", "decimal(12,2)"), checks={"amount_positive": "amount >= 0"})
    want = table("shop.orders", col("amount", "decimal(14,2)"), checks={"amount_positive": "amount > 0"})
    (added,) = [a for a in plan(state(have), state(want)).actions if isinstance(a, AddCheck)]
    assert added.moved_for is None
    assert added.replaces is not None

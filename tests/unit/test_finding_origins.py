"""Every finding at its line, under its change (issue 45, point 3): plans that exercise every hazard class, and
every finding of them, in the assessment, the JSON and the Markdown, names its spec file:line."""

from __future__ import annotations

import dataclasses
import re

from delta_sync.model.catalog import ProbeResult
from delta_sync.model.state import CatalogState, Consumer, Origin, Table
from delta_sync.planning.actions import BreaksView, Plan
from delta_sync.planning.diff.planner import plan
from delta_sync.planning.hazard_policy import assess
from delta_sync.planning.hazards import Assessment, Hazard
from delta_sync.planning.rehearsal import Outcome, Rehearsal
from delta_sync.render.document import plan_json
from delta_sync.render.markdown import render_markdown
from tests.unit.builders import col, name, state, table

FILE = "specs/shop.yaml"


def at(line: int) -> Origin:
    return Origin(FILE, line)


def with_rows(spec: Table) -> Table:
    return dataclasses.replace(spec, num_files=3, size_bytes=3000, protocol=(1, 2))


def located(table_: Table, line: int) -> Table:
    return dataclasses.replace(table_, origin=at(line))


def every_class() -> tuple[Plan, CatalogState, Assessment]:
    have_orders = with_rows(
        table(
            "shop.orders",
            col("id", "bigint"),
            col("code", "string"),
            col("gone", "string"),
            col("old_name", "string"),
            dataclasses.replace(col("g", "int"), generated="1"),
            col("loose", "int", nullable=False),
            col("amount", "int"),
        )
    )
    want_orders = located(
        table(
            "shop.orders",
            col("amount", "int", origin=at(3)),
            col("id", "bigint", origin=at(4)),
            col("code", "int", origin=at(5)),  # string -> int: a rewrite
            dataclasses.replace(col("new_name", "string", origin=at(6)), renamed_from="old_name"),
            dataclasses.replace(col("g", "int", origin=at(7)), generated="2"),  # unsupported
            col("loose", "int", origin=at(8)),  # NOT NULL dropped
            col("payload", "variant", origin=at(9)),
            dataclasses.replace(col("filled", "string", nullable=False, origin=at(10)), backfill="'x'"),
            checks={"pos": "amount > 0"},
        ),
        1,
    )
    want_orders = dataclasses.replace(
        want_orders, checks=tuple(dataclasses.replace(c, origin=at(12)) for c in want_orders.checks)
    )
    have_tomb = with_rows(table("shop.old", col("id", "bigint")))
    have_stray = with_rows(table("shop.stray", col("id", "bigint")))
    current = dataclasses.replace(
        state(have_orders, have_tomb, have_stray),
        listed=frozenset({name("shop.orders"), name("shop.old"), name("shop.stray")}),
    )
    desired = dataclasses.replace(
        state(want_orders),
        dropped={name("shop.old"): Origin("specs/old.yaml", 1)},
        strict=True,
        strict_origin=Origin("delta-sync.yaml", 4),
        consumers=Consumer.of_texts(["delta-rs 0.10"], []),
    )
    result = plan(current, desired)
    # A view not in the specs that the change breaks (found by the review against the engine).
    result = dataclasses.replace(
        result, actions=(*result.actions, BreaksView(name("shop.orders"), name("shop.v"), "x"))
    )
    first = next(i for i, a in enumerate(result.actions) if getattr(a, "name", None) == name("shop.orders"))
    rehearsed = Rehearsal(name("shop.orders"), Outcome.FAILED, 1.0, index=first, error_class="E", message="no")
    probes = [ProbeResult(name("shop.orders"), "pos", 0)]
    allowed = (Hazard.BREAKING, Hazard.DESTRUCTIVE)
    return result, current, assess(result, current, probes, allowed, desired.consumers, [rehearsed])


def test_every_hazard_class_is_exercised_and_every_finding_names_its_line() -> None:
    _plan, _current, assessment = every_class()
    # The team policy's classes need its settings: their lines are checked in tests/unit/test_team_policy.py.
    assert {f.hazard for f in assessment.findings} == set(Hazard) - {Hazard.PROTECTED, Hazard.LIMIT, Hazard.RULE}
    missing = [f for f in assessment.findings if f.origin is None]
    assert missing == []


def test_the_json_and_the_markdown_name_the_line_of_every_finding() -> None:
    result, _current, assessment = every_class()
    document = plan_json(result, assessment)
    hazards = [h for a in document["actions"] for h in a.get("hazards", [])]
    assert len(hazards) == len(assessment.findings)
    assert all("origin" in h for h in hazards), [h for h in hazards if "origin" not in h]
    markdown = render_markdown(result, assessment)
    for block in assessment.blocks:
        origin = block.finding.origin
        assert origin is not None
        assert re.search(re.escape(f"{origin.file}:{origin.line}"), markdown), block

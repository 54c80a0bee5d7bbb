"""Every way a plan adds a table feature to an existing table is gated by the one table of Delta's features
(delta_sync.planning.features, feature_gates), each finding at the line of the column that needs it."""

from __future__ import annotations

import dataclasses

from delta_sync.model.state import Column, Consumer, Origin, Table
from delta_sync.planning import features
from delta_sync.planning.compatibility import protocol
from delta_sync.planning.diff.planner import plan
from delta_sync.planning.hazard_policy import assess
from delta_sync.planning.hazard_rules import find
from delta_sync.planning.hazards import Finding, Hazard
from tests.unit.builders import col, state, table

LINE = Origin("specs/events.yaml", 7)


def existing(*columns: Column, properties: dict[str, str] | None = None) -> Table:
    return dataclasses.replace(table("s.events", *columns, properties=properties), protocol=(1, 2))


def irreversible(have: Table, want: Table) -> list[Finding]:
    return [f for f in find(plan(state(have), state(want)), state(have)) if f.hazard is Hazard.IRREVERSIBLE]


def test_a_variant_column_is_irreversible_at_its_line() -> None:
    have = existing(col("id", "bigint"))
    want = table("s.events", col("id", "bigint"), col("payload", "variant", origin=LINE))
    (found,) = irreversible(have, want)
    assert found.reason == (
        "`payload` (variant) adds the variantType table feature for good (open-source Delta cannot drop it)"
    )
    assert found.origin == LINE
    assert found.subject == "payload"


def test_a_variant_field_added_to_a_struct_is_gated_too() -> None:
    have = existing(col("s", "struct<a:int>"))
    want = table("s.events", col("s", "struct<a:int,v:variant>", origin=LINE))
    (found,) = irreversible(have, want)
    assert "`s.v` (variant) adds the variantType table feature for good" in found.reason
    assert found.origin == LINE


def test_a_rewrite_to_variant_is_gated_at_the_columns_line() -> None:
    have = existing(col("body", "string"))
    want = table("s.events", dataclasses.replace(col("body", "variant", origin=LINE), using="parse_json(body)"))
    found = irreversible(have, want)
    assert [f.reason for f in found] == [
        "`body` (variant) adds the variantType table feature for good (open-source Delta cannot drop it)"
    ]
    assert found[0].origin == LINE


def test_timestamp_ntz_is_gated_once_by_its_own_switch() -> None:
    have = existing(col("id", "bigint"))
    want = table("s.events", col("id", "bigint"), col("at", "timestamp_ntz", origin=LINE))
    (found,) = irreversible(have, want)
    assert found.reason.startswith("`at` of type timestamp_ntz needs the timestampNtz feature")
    assert "for good" in found.reason


def test_nothing_is_gated_on_a_new_table_or_one_that_has_the_feature() -> None:
    want = table("s.events", col("payload", "variant"))
    assert [f for f in find(plan(state(), state(want)), state()) if f.hazard is Hazard.IRREVERSIBLE] == []
    have = dataclasses.replace(
        table("s.events", col("v", "variant"), properties={"delta.feature.variantType": "supported"}), protocol=(3, 7)
    )
    want = table("s.events", col("v", "variant"), col("w", "variant"))
    assert irreversible(have, want) == []


def test_a_first_check_is_not_gated_as_delta_sync_drops_its_checks_itself() -> None:
    have = existing(col("id", "bigint"))
    want = table("s.events", col("id", "bigint"), checks={"pos": "id > 0"})
    assert irreversible(have, want) == []
    decided = features.decision("checkConstraints")
    assert decided is not None
    assert not decided.gated


def test_the_compatibility_finding_of_a_variant_column_names_its_line_and_column() -> None:
    have = existing(col("id", "bigint"))
    want = table("s.events", col("id", "bigint"), col("payload", "variant", origin=LINE))
    result = plan(state(have), state(want))
    assessment = assess(result, state(have), (), (), Consumer.of_texts(["delta-rs 0.10"], []))
    compat = [f for f in assessment.findings if f.hazard is Hazard.COMPATIBILITY]
    assert compat
    assert all(f.origin == LINE and f.subject == "payload" for f in compat), compat


def test_the_protocol_rules_derive_from_the_table() -> None:
    assert protocol.LEGACY["columnMapping"] == (2, 5)
    assert "variantType" in protocol.READER_WRITER
    assert "checkpointProtection" not in protocol.REMOVABLE_FEATURES
    assert protocol.REQUIRES["clustering"] == ("domainMetadata",)
    assert features.canonical("VARIANTTYPE") == "variantType"

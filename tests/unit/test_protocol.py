"""Protocol computation: what each feature delta-sync can enable does to a table's protocol.

Every transition below was observed on open-source Delta 4.4 (DESCRIBE DETAIL before and after the
statement); tests/spark/test_compatibility.py re-checks the predictions of whole plans on real Delta.
"""

from __future__ import annotations

import dataclasses

import pytest

from delta_sync.model.state import Check, Identity, TableName
from delta_sync.planning.actions import (
    Action,
    AddCheck,
    AlterColumnType,
    ClusterBy,
    Conversion,
    CreateTable,
    DropFeature,
    EnableFeature,
    PropertyChange,
    RenameColumn,
    RewriteTable,
    SetDefault,
    SetProperties,
)
from delta_sync.planning.compatibility import protocol
from delta_sync.planning.compatibility.protocol import Protocol, new_table, with_feature, without_feature
from tests.unit.builders import column, live, table

BASE = {"appendOnly", "invariants"}
T = TableName.parse("s.t")


def p(reader: int, writer: int, *features: str) -> Protocol:
    return Protocol(reader, writer, frozenset(BASE | set(features)))


@pytest.mark.parametrize(
    ("start", "feature", "end"),
    [
        # Each row: Delta 4.4 on a table with `start`, after the statement enabling `feature`.
        (p(1, 2), "checkConstraints", p(1, 3, "checkConstraints")),
        # Writer 5 would imply changeDataFeed and generatedColumns: Delta names exactly what is needed.
        (p(1, 3, "checkConstraints"), "columnMapping", p(2, 7, "checkConstraints", "columnMapping")),
        (p(1, 2), "columnMapping", p(2, 7, "columnMapping")),
        (p(2, 7, "columnMapping"), "allowColumnDefaults", p(2, 7, "columnMapping", "allowColumnDefaults")),
        (p(2, 7, "columnMapping"), "deletionVectors", p(3, 7, "columnMapping", "deletionVectors")),
        (p(1, 2), "typeWidening", p(3, 7, "typeWidening")),
        (p(1, 2), "allowColumnDefaults", p(1, 7, "allowColumnDefaults")),
        (p(1, 7, "allowColumnDefaults"), "columnMapping", p(2, 7, "allowColumnDefaults", "columnMapping")),
        (p(2, 7, "columnMapping"), "changeDataFeed", p(2, 7, "columnMapping", "changeDataFeed")),
        (p(2, 7, "columnMapping"), "timestampNtz", p(3, 7, "columnMapping", "timestampNtz")),
        (p(1, 2), "clustering", p(1, 7, "clustering", "domainMetadata")),
        (p(1, 2), "rowTracking", p(1, 7, "rowTracking", "domainMetadata")),
        (p(1, 2), "icebergCompatV2", p(2, 7, "columnMapping", "icebergCompatV2")),
        (p(1, 2, "deletionVectors"), "deletionVectors", p(1, 2, "deletionVectors")),
    ],
    ids=lambda v: v if isinstance(v, str) else None,
)
def test_enabling_a_feature(start: Protocol, feature: str, end: Protocol) -> None:
    assert with_feature(start, feature) == end


@pytest.mark.parametrize(
    ("start", "feature", "end"),
    [
        # Reader-writer features leave checkpointProtection behind; reader versions fall to what is left.
        (
            p(3, 7, "columnMapping", "deletionVectors", "checkConstraints"),
            "deletionVectors",
            p(2, 7, "columnMapping", "checkConstraints", "checkpointProtection"),
        ),
        (p(3, 7, "typeWidening"), "typeWidening", p(1, 7, "checkpointProtection")),
        (
            p(3, 7, "deletionVectors", "rowTracking", "domainMetadata"),
            "deletionVectors",
            p(1, 7, "rowTracking", "domainMetadata", "checkpointProtection"),
        ),
        # Writer-only features go without a trace.
        (p(1, 7, "rowTracking", "domainMetadata"), "rowTracking", p(1, 7, "domainMetadata")),
        (
            p(3, 7, "inCommitTimestamp", "v2Checkpoint"),
            "inCommitTimestamp",
            p(3, 7, "v2Checkpoint"),
        ),
        (p(3, 7, "v2Checkpoint"), "v2Checkpoint", p(1, 7, "checkpointProtection")),
        # Only legacy features left: back to the legacy versions that imply exactly them (Delta's protocol
        # normalisation; the one transition here not observed directly: allowColumnDefaults cannot be dropped).
        (p(1, 7, "checkConstraints", "allowColumnDefaults"), "allowColumnDefaults", p(1, 3, "checkConstraints")),
    ],
)
def test_dropping_a_feature(start: Protocol, feature: str, end: Protocol) -> None:
    assert without_feature(start, feature) == end


def test_new_tables_get_what_their_spec_needs() -> None:
    plain = table("s.t", column("id", "bigint"))
    assert new_table(plain) == p(1, 2)
    checked = table("s.t", column("id", "bigint"), checks={"pos": "id > 0"})
    assert new_table(checked) == p(1, 3, "checkConstraints")
    rich = dataclasses.replace(
        table(
            "s.t",
            column("id", "bigint", identity=Identity(1, 1)),
            column("s", "string"),
            column("g", "int", generated="length(s)"),
        ),
        clustered_by=("s",),
    )
    assert new_table(rich) == p(1, 7, "identityColumns", "generatedColumns", "clustering", "domainMetadata")
    vectors = table("s.t", column("id", "bigint"), properties={"delta.enableDeletionVectors": "true"})
    assert new_table(vectors) == p(3, 7, "deletionVectors")
    typed = table("s.t", column("v", "variant"), column("t", "timestamp_ntz"))
    assert new_table(typed) == p(3, 7, "variantType", "timestampNtz")
    defaults = table("s.t", column("c", "string", default="'x'"))
    assert new_table(defaults) == p(1, 7, "allowColumnDefaults")
    versions = table("s.t", column("id", "bigint"), properties={"delta.minWriterVersion": "4"})
    assert new_table(versions) == p(1, 4, "checkConstraints", "changeDataFeed", "generatedColumns")


@pytest.mark.parametrize(
    ("key", "value", "feature"),
    [
        ("delta.enableDeletionVectors", "true", "deletionVectors"),
        ("delta.enableTypeWidening", "TRUE", "typeWidening"),
        ("delta.enableRowTracking", "true", "rowTracking"),
        ("delta.enableChangeDataFeed", "true", "changeDataFeed"),
        ("delta.appendOnly", "true", "appendOnly"),
        ("delta.enableInCommitTimestamps", "true", "inCommitTimestamp"),
        ("delta.checkpointPolicy", "v2", "v2Checkpoint"),
        ("delta.columnMapping.mode", "name", "columnMapping"),
        ("delta.columnMapping.mode", "id", "columnMapping"),
        ("delta.enableIcebergCompatV2", "true", "icebergCompatV2"),
        ("delta.feature.allowColumnDefaults", "supported", "allowColumnDefaults"),
        ("delta.feature.timestampNtz", "enabled", "timestampNtz"),
    ],
)
def test_properties_that_turn_a_feature_on(key: str, value: str, feature: str) -> None:
    assert protocol.features_of_properties([(key, value)]) == [feature]


@pytest.mark.parametrize(
    ("key", "value"),
    [("delta.enableDeletionVectors", "false"), ("delta.columnMapping.mode", "none"), ("owner", "true")],
)
def test_properties_that_turn_nothing_on(key: str, value: str) -> None:
    assert protocol.features_of_properties([(key, value)]) == []


def test_a_property_turned_off_names_its_feature() -> None:
    assert protocol.feature_of_property("delta.enableDeletionVectors", "false") == "deletionVectors"
    assert protocol.feature_of_property("delta.checkpointPolicy", "classic") == "v2Checkpoint"
    assert protocol.feature_of_property("delta.enableDeletionVectors", "true") is None
    assert protocol.feature_of_property("owner", "false") is None


def test_every_action_that_enables_a_feature_changes_the_protocol() -> None:
    current = live(table("s.t", column("id", "bigint"), column("n", "int")), protocol=(1, 2))
    actions: list[Action] = [
        AddCheck(T, Check("pos", "id > 0")),
        EnableFeature(T, "delta.columnMapping.mode", "name", "renaming `n`"),
        RenameColumn(T, "n", "m"),
        EnableFeature(T, "delta.feature.allowColumnDefaults", "supported", "a default"),
        SetDefault(T, "m", None, "1"),
        EnableFeature(T, "delta.enableTypeWidening", "true", "widening"),
        AlterColumnType(T, "m", "int", "bigint"),
        ClusterBy(T, (), ("id",)),
        SetProperties(T, (PropertyChange("delta.enableDeletionVectors", None, "true"),)),
    ]
    change = protocol.evolve(current, list(enumerate(actions)))
    assert change is not None
    assert [s.index for s in change.steps] == [0, 1, 3, 5, 7, 8]
    assert change.after == p(
        3,
        7,
        "checkConstraints",
        "columnMapping",
        "allowColumnDefaults",
        "typeWidening",
        "clustering",
        "domainMetadata",
        "deletionVectors",
    )
    assert change.text() == (
        "reader 1 -> 3, writer 2 -> 7; features +allowColumnDefaults +checkConstraints +clustering "
        "+columnMapping +deletionVectors +domainMetadata +typeWidening"
    )


def test_a_drop_feature_step_and_its_text() -> None:
    current = live(
        table("s.t", column("id", "bigint"), properties={"delta.feature.typeWidening": "supported"}),
        protocol=(3, 7),
    )
    change = protocol.evolve(current, [(0, DropFeature(T, "typeWidening", "off"))])
    assert change is not None
    assert change.text() == "reader 3 -> 1, writer 7; features +checkpointProtection -typeWidening"


def test_no_change_and_unknown_protocols_give_none() -> None:
    known = live(table("s.t", column("id", "bigint")), protocol=(1, 2))
    unknown = live(table("s.t", column("id", "bigint")))
    comment = SetProperties(T, (PropertyChange("owner", None, "me"),))
    assert protocol.evolve(known, [(0, comment)]) is None
    assert protocol.evolve(unknown, [(0, AddCheck(T, Check("pos", "id > 0")))]) is None


def test_a_new_table_is_shown_only_beyond_the_default_protocol() -> None:
    plain = CreateTable(table("s.t", column("id", "bigint")))
    change = protocol.evolve(None, [(0, plain)])
    assert change is not None
    assert not change.notable
    checked = CreateTable(table("s.t", column("id", "bigint"), checks={"pos": "id > 0"}))
    change = protocol.evolve(None, [(0, checked)])
    assert change is not None
    assert change.notable
    assert change.text() == "new: reader 1, writer 3; features checkConstraints"


def test_plan_and_drop_reasons_say_what_a_drop_costs() -> None:
    assert "checkpointProtection" in protocol.drop_reason("deletionVectors")
    assert "rewrites" in protocol.drop_reason("deletionVectors")
    assert "checkpointProtection" not in protocol.drop_reason("rowTracking")
    assert protocol.drop_reason("variantType") == "Delta cannot drop it"


def test_legacy_protocols_lose_a_dropped_feature_as_delta_normalises_them() -> None:
    assert without_feature(p(1, 3, "checkConstraints"), "checkConstraints") == p(1, 2)
    legacy5 = Protocol.of_versions(2, 5)
    assert without_feature(legacy5, "columnMapping") == p(
        1, 7, "checkConstraints", "changeDataFeed", "generatedColumns", "checkpointProtection"
    )


def test_types_are_matched_by_type_name_not_by_field_names() -> None:
    assert protocol.features_of_type("struct<variant:string>") == []
    assert protocol.features_of_type("struct<v:variant>") == ["variantType"]
    assert protocol.features_of_type("array<timestamp_ntz>") == ["timestampNtz"]
    assert protocol.features_of_type("struct<timestamp_ntz_at:timestamp>") == []


def test_feature_names_are_canonical_whatever_their_case() -> None:
    assert protocol.features_of_properties([("delta.feature.DeletionVectors", "supported")]) == ["deletionVectors"]
    current = live(
        table("s.t", column("id", "bigint"), properties={"delta.feature.DELETIONVECTORS": "supported"}),
        protocol=(3, 7),
    )
    read = protocol.of_table(current)
    assert read is not None
    assert "deletionVectors" in read.reader_features


def test_a_rewrite_adds_what_its_new_types_and_restated_rules_need() -> None:
    current = live(table("s.t", column("id", "bigint"), column("at", "timestamp")), protocol=(1, 2))
    rewrite = RewriteTable(
        T,
        ("id", "at"),
        (Conversion("at", "timestamp", "timestamp_ntz", "CAST(at AS timestamp_ntz)"),),
        (),
        (),
        None,
        (),
        (Check("ds_nn_id", "id IS NOT NULL"),),
        ("a type change",),
    )
    change = protocol.evolve(current, [(0, rewrite)])
    assert change is not None
    assert change.added >= {"timestampNtz", "checkConstraints"}

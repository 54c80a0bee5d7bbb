"""Dropping table features on purpose: a spec that turns a feature's property off (or names the feature
`null`) plans `ALTER TABLE ... DROP FEATURE` where open-source Delta 4.4 can drop it, gated as
irreversible, with its cost; features Delta cannot drop are refused with the way out."""

from __future__ import annotations

import dataclasses

import pytest

from delta_sync.model.state import Check, Table
from delta_sync.planning import ddl
from delta_sync.planning.actions import DropFeature, SetProperties, Unsupported
from delta_sync.planning.diff.planner import plan
from delta_sync.planning.hazard_policy import assess
from delta_sync.planning.hazards import Hazard
from tests.unit.builders import column, live, state, table

FEATURES = {
    "deletionVectors": {"delta.enableDeletionVectors": "true"},
    "typeWidening": {"delta.enableTypeWidening": "true"},
    "rowTracking": {"delta.enableRowTracking": "true", "delta.feature.domainMetadata": "supported"},
    "inCommitTimestamp": {"delta.enableInCommitTimestamps": "true"},
    "v2Checkpoint": {"delta.checkpointPolicy": "v2"},
}


def have(feature: str, **extra: str) -> Table:
    properties = {**FEATURES.get(feature, {}), f"delta.feature.{feature}": "supported", **extra}
    return live(table("s.t", column("id", "bigint"), properties=properties), protocol=(3, 7))


def want(**properties: str | None) -> Table:
    kept = {k: v for k, v in properties.items() if v is not None}
    removed = tuple(k for k, v in properties.items() if v is None)
    return dataclasses.replace(table("s.t", column("id", "bigint"), properties=kept), removed_properties=removed)


@pytest.mark.parametrize(
    ("feature", "key", "off"),
    [
        ("deletionVectors", "delta.enableDeletionVectors", "false"),
        ("typeWidening", "delta.enableTypeWidening", "false"),
        ("rowTracking", "delta.enableRowTracking", "false"),
        ("inCommitTimestamp", "delta.enableInCommitTimestamps", "false"),
        ("v2Checkpoint", "delta.checkpointPolicy", "classic"),
    ],
)
def test_a_property_turned_off_drops_its_feature_last(feature: str, key: str, off: str) -> None:
    planned = plan(state(have(feature)), state(want(**{key: off})))
    assert [type(a) for a in planned.actions] == [SetProperties, DropFeature]
    drop = planned.actions[-1]
    assert isinstance(drop, DropFeature)
    assert drop.feature == feature
    assert ddl.to_sql(drop) == (f"ALTER TABLE `s`.`t` DROP FEATURE `{feature}`",)
    (finding,) = [f for f in assess(planned, state(have(feature)), (), ()).findings if f.index == 1]
    assert finding.hazard is Hazard.IRREVERSIBLE
    assert finding.reason.startswith(f"DROP FEATURE {feature}: `{key}` is {off}: Delta ")


def test_the_cost_of_a_reader_feature_names_checkpoint_protection() -> None:
    planned = plan(state(have("deletionVectors")), state(want(**{"delta.enableDeletionVectors": "false"})))
    drop = planned.actions[-1]
    assert isinstance(drop, DropFeature)
    assert "rewrites the data files that have them" in drop.reason
    assert "checkpointProtection" in drop.reason


def test_nothing_to_drop_when_the_table_never_had_the_feature() -> None:
    current = live(table("s.t", column("id", "bigint")), protocol=(1, 2))
    planned = plan(state(current), state(want(**{"delta.enableDeletionVectors": "false"})))
    assert planned.is_empty


def test_a_feature_set_to_null_is_dropped() -> None:
    planned = plan(state(have("deletionVectors")), state(want(**{"delta.feature.deletionVectors": None})))
    assert [(type(a), getattr(a, "feature", None)) for a in planned.actions] == [(DropFeature, "deletionVectors")]


def test_a_feature_delta_cannot_drop_is_refused_with_the_way_out() -> None:
    planned = plan(state(have("timestampNtz")), state(want(**{"delta.feature.timestampNtz": None})))
    (refused,) = planned.actions
    assert isinstance(refused, Unsupported)
    assert "cannot drop the timestampNtz feature" in refused.reason
    assert refused.remedy == "remove the null entry from the spec (the table keeps the feature)"


def test_check_constraints_stay_while_the_spec_keeps_checks() -> None:
    rule = Check("pos", "id > 0")
    current = dataclasses.replace(have("checkConstraints"), checks=(rule,))
    desired = dataclasses.replace(want(**{"delta.feature.checkConstraints": None}), checks=(rule,))
    (refused,) = plan(state(current), state(desired)).actions
    assert isinstance(refused, Unsupported)
    assert "while the table keeps CHECK constraints" in refused.reason


def test_a_feature_this_plan_needs_is_dropped_after_its_use_so_the_plan_converges() -> None:
    current = live(table("s.t", column("n", "decimal(10,2)")), protocol=(1, 2))
    desired = table("s.t", column("n", "decimal(12,2)"), properties={"delta.enableTypeWidening": "false"})
    planned = plan(state(current), state(desired))
    kinds = [type(a).__name__ for a in planned.actions]
    assert kinds == ["EnableFeature", "AlterColumnType", "SetProperties", "DropFeature"]


def test_a_switch_off_with_the_feature_named_keeps_the_feature() -> None:
    # What `import` writes for a table whose deletion vectors are off but still in the protocol.
    kept = want(**{"delta.enableDeletionVectors": "false", "delta.feature.deletionVectors": "supported"})
    current = have("deletionVectors", **{"delta.enableDeletionVectors": "false"})
    assert plan(state(current), state(kept)).is_empty


def test_a_spec_that_turns_a_feature_on_and_drops_it_is_refused() -> None:
    both = want(**{"delta.enableTypeWidening": "true", "delta.feature.typeWidening": None})
    (refused,) = plan(state(have("typeWidening")), state(both)).actions
    assert isinstance(refused, Unsupported)
    assert refused.reason == "the spec both turns the typeWidening feature on and drops it"


def test_a_feature_another_one_needs_is_refused_until_that_one_is_gone() -> None:
    current = have("rowTracking")
    desired = want(**{"delta.enableRowTracking": "true", "delta.feature.domainMetadata": None})
    (refused,) = plan(state(current), state(desired)).actions
    assert isinstance(refused, Unsupported)
    assert "while the table has rowTracking, which needs it" in refused.reason


def test_column_mapping_stays_while_names_need_it() -> None:
    current = live(
        table(
            "s.t",
            column("my col", "bigint"),
            properties={"delta.columnMapping.mode": "name", "delta.feature.columnMapping": "supported"},
        ),
        protocol=(2, 7),
    )
    desired = dataclasses.replace(
        table("s.t", column("my col", "bigint")),
        removed_properties=("delta.feature.columnMapping",),
    )
    (refused,) = plan(state(current), state(desired)).actions
    assert isinstance(refused, Unsupported)
    assert "column names need it (`my col`)" in refused.reason


def test_feature_names_in_any_case_are_the_same_feature() -> None:
    planned = plan(state(have("deletionVectors")), state(want(**{"delta.feature.DeletionVectors": None})))
    assert [getattr(a, "feature", None) for a in planned.actions] == ["deletionVectors"]


def test_import_names_a_feature_whose_switch_is_off() -> None:
    from delta_sync.specs.importer import user_properties

    current = have("deletionVectors", **{"delta.enableDeletionVectors": "false"})
    assert user_properties(current) == {
        "delta.enableDeletionVectors": "false",
        "delta.feature.deletionVectors": "supported",
    }
    plain = live(table("s.t", column("id", "bigint"), properties={"delta.enableDeletionVectors": "false"}))
    assert user_properties(plain) == {"delta.enableDeletionVectors": "false"}

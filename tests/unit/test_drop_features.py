"""Dropping table features on purpose: a spec that turns a feature's property off (or names the feature
`null`) plans `ALTER TABLE ... DROP FEATURE` where open-source Delta 4.4 can drop it, gated as
irreversible, with its cost; features Delta cannot drop are refused with the way out."""

from __future__ import annotations

import dataclasses

import pytest

from delta_sync import ddl
from delta_sync.actions import DropFeature, EnableFeature, SetProperties, Unsupported
from delta_sync.hazards import Hazard, assess
from delta_sync.model import Check, Table
from delta_sync.planner import plan
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


def test_no_drop_while_the_same_plan_needs_the_feature() -> None:
    current = live(
        table("s.t", column("n", "decimal(10,2)"), properties={"delta.feature.typeWidening": "supported"}),
        protocol=(3, 7),
    )
    desired = table("s.t", column("n", "decimal(12,2)"), properties={"delta.enableTypeWidening": "false"})
    planned = plan(state(current), state(desired))
    assert not any(isinstance(a, DropFeature) for a in planned.actions)
    assert any(isinstance(a, EnableFeature) for a in planned.actions)

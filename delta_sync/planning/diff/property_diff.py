"""The diff of a table's properties and comment: properties set and unset (delta-sync's key properties
left to the keys' diff), a feature the spec turns off dropped with DROP FEATURE where Delta allows it, and
the table comment, folded into SET TBLPROPERTIES when the properties change too."""

from __future__ import annotations

from dataclasses import replace

from delta_sync.model import keys
from delta_sync.planning.actions import (
    TABLE_COMMENT_KEY,
    DropFeature,
    PropertyChange,
    SetProperties,
    SetTableComment,
    UnsetProperties,
)
from delta_sync.planning.compatibility import protocol
from delta_sync.planning.diff.conventions import current_property, mapping_only_names, property_value_key
from delta_sync.planning.diff.table_diff import TableDiff
from delta_sync.planning.team_policy import PROTECTED_PROPERTY


def diff_comment(diff: TableDiff) -> None:
    have, want = diff.have.comment, diff.want.comment
    if have == want:
        return
    update = next((i for i, a in enumerate(diff.actions) if isinstance(a, SetProperties)), None)
    if want is not None and update is not None:
        # Delta stores `'comment'` in SET TBLPROPERTIES as the table comment: one commit, not two.
        properties = diff.actions[update]
        assert isinstance(properties, SetProperties)
        changes = (*properties.changes, PropertyChange(TABLE_COMMENT_KEY, have, want))
        diff.actions[update] = replace(properties, changes=changes)
        return
    diff.actions.append(SetTableComment(diff.want.name, have, want, diff.want.origin))


def _is_key_property(key: str) -> bool:
    """Keys are delta-sync's own properties: planned as keys (diff_keys), never as properties."""
    lowered = key.lower()
    return lowered == keys.PRIMARY_KEY_PROPERTY or lowered.startswith(keys.FOREIGN_KEY_PREFIX)


def diff_properties(diff: TableDiff) -> None:
    current = diff.have.property_map
    enabled = {key.lower() for key in diff.features}
    defaulted = {key.lower() for key in diff.want.defaulted}
    changes = []
    for key, value in diff.want.properties:
        if _is_key_property(key):
            continue
        before = current_property(current, key)
        if key.lower() in enabled and property_value_key(key, diff.features[_key(diff, key)][0]) == (
            property_value_key(key, value)
        ):
            continue
        if before is None and _off_and_absent(diff, key, value):
            continue
        if before is None or property_value_key(key, before) != property_value_key(key, value):
            changes.append(PropertyChange(key, before, value, default=key.lower() in defaulted))
    if changes:
        diff.actions.append(SetProperties(diff.want.name, tuple(changes), diff.want.origin))
    for key, value in diff.want.properties:
        feature = protocol.feature_of_property(key, value)
        if feature is not None and feature in protocol.REMOVABLE_FEATURES:
            # Turning the property off only stops new use: the feature stays until it is dropped.
            _drop_feature(diff, feature, f"`{key}` is {value}")
    removed = []
    for key in diff.want.removed_properties:
        if _is_key_property(key):
            continue
        before = current_property(current, key)
        if before is not None and key.lower().startswith(protocol.FEATURE_PREFIX):
            feature = protocol.canonical(key.split(".", 2)[2])
            if feature in protocol.REMOVABLE_FEATURES:
                _drop_feature(diff, feature, f"`{key}` is null")
                continue
            # UNSET leaves a feature in the protocol: it would be planned again on every run.
            diff.block(
                key,
                f"`{key}` cannot be removed: open-source Delta cannot drop the {feature} feature from a table",
                "remove the null entry from the spec (the table keeps the feature)",
            )
        elif before is not None:
            removed.append((key, before))
    marked = current_property(current, PROTECTED_PROPERTY)
    if marked is not None and current_property(diff.want.property_map, PROTECTED_PROPERTY) is None:
        # The spec no longer says protect: true: the one change that lifts the protection, shown as such.
        removed.append((PROTECTED_PROPERTY, marked))
    if removed:
        diff.actions.append(UnsetProperties(diff.want.name, tuple(removed), diff.want.origin))


def _features_present(diff: TableDiff) -> set[str]:
    """The table's features once this plan's feature steps ran."""
    return protocol.named_features(diff.have) | {
        f for k, (v, _why, _at) in diff.features.items() for f in protocol.features_of_properties([(k, v)])
    }


def _off_and_absent(diff: TableDiff, key: str, value: str) -> bool:
    """A feature's switch declared off on a table without the feature: not set means off, and DROP
    FEATURE removes some switches (`delta.enableTypeWidening`) with the feature."""
    feature = protocol.feature_of_property(key, value)
    return feature is not None and feature not in _features_present(diff)


def _drop_feature(diff: TableDiff, feature: str, why: str) -> None:
    """`ALTER TABLE ... DROP FEATURE` of a feature the table has (or gets from this plan) and the spec turns
    off; refused with the way out where Delta would refuse it."""
    feature = protocol.canonical(feature)
    present = _features_present(diff)
    if feature not in present or any(isinstance(a, DropFeature) and a.feature == feature for a in diff.actions):
        return
    subject = f"{protocol.FEATURE_PREFIX}{feature}"
    named = {
        protocol.canonical(k[len(protocol.FEATURE_PREFIX) :])
        for k, v in diff.want.properties
        if k.lower().startswith(protocol.FEATURE_PREFIX) and v.lower() in ("supported", "enabled")
    }
    if feature in named:
        return  # the switch is off, and the spec keeps the feature itself
    if feature == "checkConstraints":
        if diff.want.checks or diff.enforced:
            columns = ", ".join(f"`{c.name}`" for c in diff.enforced)
            remedy = "remove the spec's checks" + (f" and `nullable: false` of {columns}" if columns else "")
            diff.block(
                subject,
                "the checkConstraints feature cannot be dropped while the table keeps CHECK constraints",
                f"{remedy} first, or keep the feature",
            )
            return
    elif feature in protocol.features_of_table(diff.want):
        diff.block(subject, f"the spec both turns the {feature} feature on and drops it", "keep one of the two")
        return
    dependents = sorted(f for f, needs in protocol.REQUIRES.items() if feature in needs and f in present)
    if dependents:
        diff.block(
            subject,
            f"the {feature} feature cannot be dropped while the table has {', '.join(dependents)}, which needs it",
            f"drop {', '.join(dependents)} first (apply), then {feature}; or keep it",
        )
        return
    odd = mapping_only_names(diff.want.columns)
    if feature == "columnMapping" and odd:
        names = ", ".join(f"`{n}`" for n in odd)
        diff.block(
            subject,
            f"column mapping cannot be dropped while column names need it ({names})",
            "rename those columns first, or keep the feature",
        )
        return
    reason = f"{why}: {protocol.drop_reason(feature)}"
    diff.actions.append(DropFeature(diff.want.name, feature, reason))


def _key(diff: TableDiff, key: str) -> str:
    return next(k for k in diff.features if k.lower() == key.lower())

"""Delta table protocols: what a table's protocol is now, and what a plan makes of it.

Pure. A protocol is a reader and a writer version plus the features it supports. Features from before
table features (appendOnly ... identityColumns) are "legacy": a protocol below reader 3 / writer 7
supports them implicitly by its versions alone. Any other feature needs writer 7 (and reader 3 when
readers must understand it) with the feature named in the protocol's lists. These are Delta 4.4's rules
(`TableFeature.scala`, `actions.scala` `Protocol`); tests/spark/test_compatibility.py checks the
predictions against what real Delta writes.

`evolve(current, actions)` replays one table's planned actions and says, per action, which features
it adds or removes, so the compatibility check (delta_sync.planning.compatibility.compat) can name the action to blame.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import assert_never

from delta_sync.model.state import Column, Table
from delta_sync.planning import features
from delta_sync.planning.actions import (
    Action,
    AddCheck,
    AddColumns,
    AddForeignKey,
    AddPrimaryKey,
    AlterColumnType,
    Backfill,
    BreaksView,
    ClusterBy,
    CreateSchema,
    CreateTable,
    CreateView,
    DropCheck,
    DropColumns,
    DropFeature,
    DropForeignKey,
    DropNotNull,
    DropPrimaryKey,
    DropTable,
    EnableFeature,
    MoveColumn,
    Notice,
    RemoveTable,
    RenameColumn,
    RenameTable,
    RestoreTable,
    RewriteTable,
    SetColumnComment,
    SetDefault,
    SetProperties,
    SetTableComment,
    UnsetProperties,
    Unsupported,
)
from delta_sync.planning.features import FEATURES

# Every rule below derives from the one table of Delta 4.4's features (delta_sync.planning.features).
# Legacy features: the reader and writer versions that imply them.
LEGACY: dict[str, tuple[int, int]] = {f.name: (max(f.reader, 1), f.writer) for f in FEATURES.values() if f.legacy}
# Features readers must understand (the rest concern writers only).
READER_WRITER = frozenset(f.name for f in FEATURES.values() if f.reader_writer)
# Features Delta adds along with another (TableFeature.requiredFeatures).
REQUIRES: dict[str, tuple[str, ...]] = {f.name: f.requires for f in FEATURES.values() if f.requires}
# Table properties that turn a feature on when set to the value given (case-insensitively).
PROPERTY_FEATURES: dict[str, tuple[str, str]] = {
    "delta.appendonly": ("true", "appendOnly"),
    "delta.enablechangedatafeed": ("true", "changeDataFeed"),
    "delta.enabledeletionvectors": ("true", "deletionVectors"),
    "delta.enabletypewidening": ("true", "typeWidening"),
    "delta.enablerowtracking": ("true", "rowTracking"),
    "delta.enableincommittimestamps": ("true", "inCommitTimestamp"),
    "delta.checkpointpolicy": ("v2", "v2Checkpoint"),
    "delta.enableicebergcompatv1": ("true", "icebergCompatV1"),
    "delta.enableicebergcompatv2": ("true", "icebergCompatV2"),
    "delta.enableicebergcompatv3": ("true", "icebergCompatV3"),
    "delta.enablevariantshredding": ("true", "variantShredding"),
}
# What `ALTER TABLE ... DROP FEATURE f` does to the table, for each feature delta-sync may drop: Delta's
# RemovableFeature list, less checkpointProtection (only with TRUNCATE HISTORY, which delta-sync never plans).
DROP_COSTS: dict[str, str] = {
    f.name: f.drop for f in FEATURES.values() if f.drop is not None and f.name != "checkpointProtection"
}
REMOVABLE_FEATURES = frozenset(DROP_COSTS)
FEATURE_PREFIX = "delta.feature."


def canonical(feature: str) -> str:
    return features.canonical(feature)


TABLE_FEATURES_READER = 3
TABLE_FEATURES_WRITER = 7
# What Delta 4.4 gives a new table that needs nothing more.
DEFAULT_VERSIONS = (1, 2)


@dataclass(frozen=True, slots=True)
class Protocol:
    reader: int
    writer: int
    # Every feature supported, the ones implied by legacy versions included.
    features: frozenset[str]

    @classmethod
    def of_versions(cls, reader: int, writer: int, named: Iterable[str] = ()) -> Protocol:
        return cls(reader, writer, frozenset(named) | _implied(reader, writer))

    @property
    def reader_features(self) -> frozenset[str]:
        """What a reader must understand to read the table."""
        if self.reader >= TABLE_FEATURES_READER:
            return frozenset(f for f in self.features if f in READER_WRITER)
        return frozenset({"columnMapping"}) if self.reader >= 2 else frozenset()

    def text(self) -> str:
        return f"reader {self.reader}, writer {self.writer}"


def _implied(reader: int, writer: int) -> frozenset[str]:
    if writer >= TABLE_FEATURES_WRITER:
        # A table-features protocol names every feature, legacy ones included.
        return frozenset()
    return frozenset(f for f, (r, w) in LEGACY.items() if r <= reader and w <= writer)


def _required(feature: str) -> list[str]:
    found: list[str] = []
    for needed in REQUIRES.get(feature, ()):
        found.extend(_required(needed))
    return [*found, feature]


def with_feature(protocol: Protocol, feature: str) -> Protocol:
    """`protocol` once Delta has added `feature` (and the features it requires)."""
    for name in _required(feature):
        protocol = _add(protocol, name)
    return protocol


def _add(protocol: Protocol, feature: str) -> Protocol:
    if feature in protocol.features:
        return protocol
    legacy = LEGACY.get(feature)
    if legacy is not None and protocol.writer < TABLE_FEATURES_WRITER:
        reader, writer = max(protocol.reader, legacy[0]), max(protocol.writer, legacy[1])
        if _implied(reader, writer) == protocol.features | {feature}:
            return Protocol(reader, writer, protocol.features | {feature})
        # Higher legacy versions would bring features nobody asked for (writer 5 implies change data
        # feed and generated columns): Delta names exactly the ones needed under writer 7 instead.
    reader = protocol.reader
    if feature in READER_WRITER:
        # A legacy reader-writer feature (columnMapping) fits reader 2; any other needs reader 3.
        needed = legacy[0] if legacy is not None and reader < TABLE_FEATURES_READER else TABLE_FEATURES_READER
        reader = max(reader, needed)
    return Protocol(reader, TABLE_FEATURES_WRITER, protocol.features | {feature})


def with_versions(protocol: Protocol, reader: int, writer: int) -> Protocol:
    """`delta.minReaderVersion` / `delta.minWriterVersion` set explicitly: versions only go up."""
    reader, writer = max(protocol.reader, reader), max(protocol.writer, writer)
    return Protocol(reader, writer, protocol.features | _implied(reader, writer))


def without_feature(protocol: Protocol, feature: str) -> Protocol:
    """`protocol` after `ALTER TABLE ... DROP FEATURE feature` (Delta 4.4's default, fast drop): a
    reader-writer feature leaves `checkpointProtection` behind, which guards the history that still
    uses it; a protocol whose remaining features are all legacy goes back to legacy versions."""
    features = protocol.features - {feature}
    if feature in READER_WRITER and feature != "checkpointProtection":
        features |= {"checkpointProtection"}
    # Delta lists a legacy protocol's features explicitly first, then normalises.
    return _normalized(Protocol(protocol.reader, TABLE_FEATURES_WRITER, features))


def _normalized(protocol: Protocol) -> Protocol:
    if protocol.writer < TABLE_FEATURES_WRITER:
        return protocol
    # Only legacy features left: the legacy versions that imply exactly them, if there are such.
    for reader, writer in sorted({(1, 1), (2, 6), *LEGACY.values()}, key=lambda v: (v[1], v[0])):
        if _implied(reader, writer) == protocol.features:
            return Protocol(reader, writer, protocol.features)
    readers = {f for f in protocol.features if f in READER_WRITER}
    if not readers:
        return replace(protocol, reader=1)
    if all(f in LEGACY for f in readers):
        return replace(protocol, reader=2)
    return protocol


def features_of_table(table: Table) -> list[str]:
    """The features a table as the spec declares it needs (what CREATE or REPLACE adds)."""
    found = [*features_of_properties(table.properties)]
    found.extend(f for column in table.columns for f in features_of_column(column))
    if table.checks:
        found.append("checkConstraints")
    if table.clustered_by:
        found.append("clustering")
    return found


def features_of_column(column: Column) -> list[str]:
    found = []
    if column.generated:
        found.append("generatedColumns")
    if column.identity is not None:
        found.append("identityColumns")
    if column.default is not None:
        found.append("allowColumnDefaults")
    return found + features_of_type(column.type)


_TYPE_FEATURES = (
    ("timestamp_ntz", "timestampNtz"),
    ("variant", "variantType"),
    ("geometry", "geospatial"),
    ("geography", "geospatial"),
)


def features_of_type(kind: str) -> list[str]:
    """Features a column type needs, from its type names only (`struct<variant:string>` names a field)."""
    words = set(re.findall(r"(?<![\w`])(timestamp_ntz|variant|geometry|geography)(?![\w`:])", kind.lower()))
    return list(dict.fromkeys(feature for word, feature in _TYPE_FEATURES if word in words))


def features_of_properties(properties: Iterable[tuple[str, str]]) -> list[str]:
    found = []
    for key, value in properties:
        lowered = key.lower()
        if lowered.startswith(FEATURE_PREFIX) and value.lower() in ("supported", "enabled"):
            found.append(canonical(key[len(FEATURE_PREFIX) :]))
        elif lowered == "delta.columnmapping.mode" and value.lower() in ("name", "id"):
            found.append("columnMapping")
        elif lowered in PROPERTY_FEATURES and value.lower() == PROPERTY_FEATURES[lowered][0]:
            found.append(PROPERTY_FEATURES[lowered][1])
    return found


def drop_reason(feature: str) -> str:
    """What dropping `feature` costs, as a plan shows it."""
    if feature not in DROP_COSTS:
        return "Delta cannot drop it"
    cost = f"Delta {DROP_COSTS[feature]}"
    if feature in READER_WRITER:
        cost += (
            "; the versions before the drop still use it, so Delta adds the checkpointProtection writer "
            "feature, which keeps engines without it from cleaning up that history (it goes only with "
            "DROP FEATURE checkpointProtection TRUNCATE HISTORY, 24 hours later at the earliest); "
            "concurrent writes to the table fail while it runs"
        )
    return cost


def feature_of_property(key: str, value: str) -> str | None:
    """The feature a table property switches off (`delta.enableDeletionVectors: false`), if any."""
    entry = PROPERTY_FEATURES.get(key.lower())
    if entry is None or value.lower() == entry[0]:
        return None
    return entry[1]


def _versions_of_properties(properties: Iterable[tuple[str, str]]) -> tuple[int, int]:
    reader = writer = 0
    for key, value in properties:
        if key.lower() == "delta.minreaderversion" and value.isdigit():
            reader = int(value)
        elif key.lower() == "delta.minwriterversion" and value.isdigit():
            writer = int(value)
    return reader, writer


def named_features(table: Table) -> set[str]:
    """The features a table read from the catalog has (its `delta.feature.*` properties), canonically spelled."""
    return {canonical(k[len(FEATURE_PREFIX) :]) for k, _v in table.properties if k.lower().startswith(FEATURE_PREFIX)}


def of_table(table: Table) -> Protocol | None:
    """The protocol of a table as read from the catalog (None when the reader did not record it)."""
    if table.protocol is None:
        return None
    reader, writer = table.protocol
    return Protocol.of_versions(reader, writer, named_features(table))


def new_table(table: Table) -> Protocol:
    """The protocol Delta gives a table created as `table` declares it."""
    protocol = Protocol.of_versions(*DEFAULT_VERSIONS)
    reader, writer = _versions_of_properties(table.properties)
    if reader or writer:
        protocol = with_versions(protocol, reader, writer)
    for feature in features_of_table(table):
        protocol = with_feature(protocol, feature)
    return protocol


def enabled_by(action: Action) -> list[str]:
    """The features `action` turns on, as Delta adds them (before their requirements)."""
    match action:
        case EnableFeature():
            return features_of_properties([(action.key, action.value)])
        case SetProperties():
            return features_of_properties([(c.key, c.after) for c in action.changes])
        case AddCheck():
            return ["checkConstraints"]
        case SetDefault():
            return ["allowColumnDefaults"] if action.after is not None else []
        case AddColumns():
            return [f for column in action.columns for f in features_of_column(column)]
        case AlterColumnType():
            return features_of_type(action.after)
        case ClusterBy():
            return ["clustering"] if action.after else []
        case RewriteTable():
            found = features_of_properties(action.properties) + (["clustering"] if action.clustered_by else [])
            found += [f for c in action.conversions for f in features_of_type(c.after)]
            return found + (["checkConstraints"] if action.checks else [])
        case (
            CreateSchema()
            | CreateTable()
            | RenameColumn()
            | DropColumns()
            | DropNotNull()
            | UnsetProperties()
            | Notice()
            | SetColumnComment()
            | SetTableComment()
            | DropCheck()
            | Unsupported()
            | AddPrimaryKey()
            | DropPrimaryKey()
            | AddForeignKey()
            | DropForeignKey()
            | Backfill()
            | RestoreTable()
            | DropTable()
            | DropFeature()
            | RenameTable()
            | RemoveTable()
            | CreateView()
            | BreaksView()
            | MoveColumn()
        ):
            return []
        case _:
            assert_never(action)


@dataclass(frozen=True, slots=True)
class Step:
    """What one planned action does to its table's protocol."""

    index: int
    before: Protocol | None
    after: Protocol | None


@dataclass(frozen=True, slots=True)
class Change:
    """A table's protocol before and after the plan (`before` None: the plan creates the table; `after`
    None: the plan drops it), and each action that changes it."""

    before: Protocol | None
    after: Protocol | None
    steps: tuple[Step, ...]

    @property
    def added(self) -> frozenset[str]:
        return (self.after.features if self.after else frozenset()) - (
            self.before.features if self.before else frozenset()
        )

    @property
    def removed(self) -> frozenset[str]:
        return (self.before.features if self.before else frozenset()) - (
            self.after.features if self.after else frozenset()
        )

    @property
    def notable(self) -> bool:
        """Worth a line in a plan: any change of an existing table's protocol, and a new table's protocol
        beyond what every table gets."""
        return (
            self.before is not None
            or self.after is None
            or (self.after.reader, self.after.writer) != (DEFAULT_VERSIONS)
        )

    def as_json(self) -> dict[str, object]:
        def side(p: Protocol | None) -> dict[str, object] | None:
            return None if p is None else {"reader": p.reader, "writer": p.writer, "features": sorted(p.features)}

        return {
            "before": side(self.before),
            "after": side(self.after),
            "added": sorted(self.added),
            "removed": sorted(self.removed),
            "text": self.text(),
        }

    def text(self) -> str:
        """`reader 1 -> 2, writer 2 -> 5; features +columnMapping` (`new: reader 1, writer 3` for a table
        the plan creates)."""
        if self.after is None:
            return "dropped"
        if self.before is None:
            # Every table has the two oldest features: only the others say something.
            named = sorted(self.after.features - _implied(*DEFAULT_VERSIONS))
            return f"new: {self.after.text()}" + (f"; features {', '.join(named)}" if named else "")
        parts = []
        for label, old, new in (
            ("reader", self.before.reader, self.after.reader),
            ("writer", self.before.writer, self.after.writer),
        ):
            parts.append(f"{label} {old}" if old == new else f"{label} {old} -> {new}")
        changes = [f"+{f}" for f in sorted(self.added)] + [f"-{f}" for f in sorted(self.removed)]
        return ", ".join(parts) + (f"; features {' '.join(changes)}" if changes else "")


def evolve(current: Table | None, actions: Sequence[tuple[int, Action]]) -> Change | None:
    """Replay one table's actions (with their indexes in the plan) on its protocol; None when the plan
    leaves the protocol as it is, or the table's current protocol is unknown."""
    before = None if current is None else of_table(current)
    if current is not None and before is None:
        return None
    protocol = before
    steps = []
    for index, action in actions:
        after: Protocol | None
        if isinstance(action, CreateTable):
            after = new_table(action.table)
        elif isinstance(action, DropTable):
            after = None
        elif protocol is None:
            continue
        elif isinstance(action, DropFeature):
            after = without_feature(protocol, action.feature)
        else:
            after = protocol
            for feature in enabled_by(action):
                after = with_feature(after, feature)
            if isinstance(action, SetProperties):
                reader, writer = _versions_of_properties((c.key, c.after) for c in action.changes)
                if reader or writer:
                    after = with_versions(after, reader, writer)
        if after != protocol:
            steps.append(Step(index, protocol, after))
        protocol = after
    if not steps:
        return None
    return Change(before, protocol, tuple(steps))

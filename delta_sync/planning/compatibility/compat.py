"""Who can still read and write each table after the plan.

Pure. For every table the plan changes, delta_sync.planning.compatibility.protocol replays its actions on its
protocol; each action that makes the table need something a declared reader or writer (the project file's
`readers:` and `writers:`) does not support is reported against that action, naming the engine, its version,
the feature and the first version of the engine that supports it (delta_sync.planning.compatibility.support_matrix).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from delta_sync.model.state import CatalogState, Consumer, TableName
from delta_sync.planning.actions import Action, CreateSchema, Plan
from delta_sync.planning.compatibility import support, support_matrix
from delta_sync.planning.compatibility.protocol import (
    TABLE_FEATURES_READER,
    TABLE_FEATURES_WRITER,
    Change,
    Protocol,
    evolve,
)

# Column mapping listed as a reader feature of a reader-3 table: some engines read only its legacy form.
MAPPING_AS_FEATURE = "columnMapping@readerVersion3"
_PSEUDO = {
    support.READER_V3: f"table features (reader version {TABLE_FEATURES_READER})",
    support.WRITER_V7: f"table features (writer version {TABLE_FEATURES_WRITER})",
    MAPPING_AS_FEATURE: "columnMapping as a reader feature (reader version 3)",
}


@dataclass(frozen=True, slots=True)
class Problem:
    """One declared engine that one planned action leaves unable to read or write its table."""

    index: int
    table: TableName
    consumer: Consumer
    # Each feature the engine lacks, with the words for which of its versions have it.
    missing: tuple[tuple[str, str], ...]
    # The plan creates the table (nobody could read it before).
    new: bool = False
    # The step's features new to the table, by Delta's names: which part of the action needs them.
    added: tuple[str, ...] = ()

    @property
    def reason(self) -> str:
        verb = "write" if self.consumer.writes else "read"
        what = "; ".join(f"{feature} ({since})" for feature, since in self.missing)
        if self.new:
            return f"{self.consumer.text()} cannot {verb} the new table, which needs {what}"
        return f"{self.consumer.text()} could no longer {verb} the table once it needs {what}"


def needs(protocol: Protocol, writes: bool) -> frozenset[str]:
    """What an engine must understand to read (or write) a table with this protocol."""
    found = set(protocol.reader_features)
    if protocol.reader >= TABLE_FEATURES_READER:
        found.add(support.READER_V3)
        if "columnMapping" in found:
            found.add(MAPPING_AS_FEATURE)
    if writes:
        found |= protocol.features
        if protocol.writer >= TABLE_FEATURES_WRITER:
            found.add(support.WRITER_V7)
    return frozenset(found)


def _first(consumer: Consumer, feature: str) -> tuple[bool, str]:
    """Whether `consumer` handles `feature`, and the words for when its engine started to."""
    special = support_matrix.COLUMN_MAPPING_AS_READER_FEATURE.get(consumer.engine)
    if feature == MAPPING_AS_FEATURE and special is None:
        return True, ""  # the engine's columnMapping row decides, and it is checked on its own
    row = support_matrix.row(consumer.engine, "columnMapping" if feature == MAPPING_AS_FEATURE else feature)
    if row is None:
        return False, f"delta-sync does not know whether {consumer.engine} supports it"
    since = row.write if consumer.writes else row.read
    if feature == MAPPING_AS_FEATURE and special is not None:
        since = special[0]
    if since is None:
        return False, f"no {consumer.engine} version supports it yet"
    if since == support.EVERY or (consumer.version is not None and _at_least(consumer.version, since)):
        return True, ""
    return False, f"{consumer.engine} {support.version_text(since)} and later do"


def _at_least(version: tuple[int, ...], since: tuple[int, ...]) -> bool:
    """`1.4` is `1.4.0`: pad the shorter with zeros before comparing."""
    width = max(len(version), len(since))
    return version + (0,) * (width - len(version)) >= since + (0,) * (width - len(since))


def feature_text(feature: str) -> str:
    return _PSEUDO.get(feature, feature)


def changes(plan: Plan, current: CatalogState) -> dict[TableName, Change]:
    """Each table whose protocol the plan changes, with the actions that change it."""
    by_table: dict[TableName, list[tuple[int, Action]]] = {}
    for index, action in enumerate(plan.actions):
        if not isinstance(action, CreateSchema):
            by_table.setdefault(action.name, []).append((index, action))
    found = {}
    for name, actions in by_table.items():
        change = evolve(current.table(name), actions)
        if change is not None:
            found[name] = change
    return found


def problems(plan: Plan, current: CatalogState, consumers: Sequence[Consumer]) -> list[Problem]:
    if not consumers:
        return []
    found = []
    for name, change in changes(plan, current).items():
        for step in change.steps:
            if step.after is None:
                continue
            for consumer in consumers:
                had = needs(step.before, consumer.writes) if step.before is not None else frozenset()
                missing = []
                for feature in sorted(needs(step.after, consumer.writes) - had):
                    handled, since = _first(consumer, feature)
                    if not handled:
                        missing.append((feature_text(feature), since))
                if missing:
                    added = sorted(step.after.features - (step.before.features if step.before else frozenset()))
                    found.append(Problem(step.index, name, consumer, tuple(missing), step.before is None, tuple(added)))
    return found

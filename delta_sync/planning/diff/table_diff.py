"""The working state of one table's diff (`TableDiff`: its actions, the features they need, the columns
whose CHECKs move, the NOT NULLs enforced), and the diff of the table's layout: partitioning and clustering."""

from __future__ import annotations

from dataclasses import dataclass, field

from delta_sync.model.state import (
    DEFAULT_CATALOG,
    Capabilities,
    Check,
    Column,
    Origin,
    Table,
)
from delta_sync.planning.actions import Action, ClusterBy, DropColumns, Unsupported
from delta_sync.planning.diff.conventions import COLUMN_MAPPING, current_property, property_value_key


@dataclass
class TableDiff:
    """Working state while one table is diffed; the result is `actions`."""

    have: Table
    want: Table
    actions: list[Action] = field(default_factory=list)
    features: dict[str, tuple[str, str, Origin | None]] = field(default_factory=dict)
    # Lower-cased column names whose CHECKs must be dropped and re-added around a change.
    touched: set[str] = field(default_factory=set)
    # Desired checks beyond the spec's: NOT NULL enforcement on existing columns.
    enforced: list[Check] = field(default_factory=list)
    # What the table's catalog accepts.
    capabilities: Capabilities = field(default_factory=Capabilities)
    # Why delta-sync cannot rewrite this table, when a change needs a rewrite (rewrite_refusal).
    no_rewrite: str | None = None
    # The spec's column order is the table's (project setting `column_order`); when it is not, `unordered`
    # says whether the table's order differs from the spec's.
    manage_order: bool = True
    unordered: bool = False

    def cannot_rewrite(self, remedy: str) -> str:
        return f"delta-sync cannot rewrite this table: {self.no_rewrite}; {remedy}" if self.no_rewrite else remedy

    def block(self, subject: str, reason: str, remedy: str, column: Column | None = None) -> None:
        origin = column.origin if column is not None else self.want.origin
        self.actions.append(Unsupported(self.want.name, subject, reason, remedy, origin))

    def refused_by_catalog(self, statement: str) -> str:
        """`statement` is refused by the table's catalog: the first half of a block's reason."""
        catalog = self.want.name.catalog or DEFAULT_CATALOG
        return f"catalog `{catalog}` ({self.capabilities.kind}) refuses {statement}"

    def need(self, feature: tuple[str, str], reason: str, origin: Origin | None = None) -> None:
        key, value = feature
        current = current_property(self.have.property_map, key)
        if feature == COLUMN_MAPPING and current is not None and current.lower() in ("name", "id"):
            return  # both modes allow rename and drop; Delta refuses a switch from id to name
        if current is None or property_value_key(key, current) != property_value_key(key, value):
            self.features.setdefault(key, (value, reason, origin or self.want.origin))


def _renamed(columns: tuple[str, ...], renamed: dict[str, str]) -> list[str]:
    """Current key columns under their new names: Delta carries a rename into partitioning and clustering."""
    return [renamed.get(c.lower(), c).lower() for c in columns]


def diff_partitioning(diff: TableDiff, renamed: dict[str, str]) -> None:
    have, want = diff.have, diff.want
    if _renamed(have.partitioned_by, renamed) == [c.lower() for c in want.partitioned_by]:
        return
    shown_have = ", ".join(have.partitioned_by) or "none"
    shown_want = ", ".join(want.partitioned_by) or "none"
    diff.block(
        "partitioned_by",
        f"partitioning changes ({shown_have}) -> ({shown_want}); Delta cannot repartition a table in place",
        diff.cannot_rewrite(f"keep partitioned_by: [{', '.join(have.partitioned_by)}]"),
    )


def diff_clustering(diff: TableDiff, renamed: dict[str, str]) -> None:
    have, want = diff.have, diff.want
    before = set(_renamed(have.clustered_by, renamed))
    after = {c.lower() for c in want.clustered_by}
    if before == after:
        return
    if have.partitioned_by:
        diff.block(
            "clustered_by",
            "a partitioned table cannot be clustered",
            diff.cannot_rewrite("remove clustered_by"),
        )
        return
    dropped = {c.key for a in diff.actions if isinstance(a, DropColumns) and not a.parent for c in a.columns}
    released = before & dropped
    if released and not after <= {c.key for c in have.columns}:
        # A clustering column can only be dropped once released, and new keys only exist after
        # ADD COLUMNS: release first (keeping what stays), then cluster by the new keys.
        keep = tuple(c for c in have.clustered_by if c.lower() not in released)
        diff.actions.append(ClusterBy(want.name, have.clustered_by, keep, True, want.origin))
        diff.actions.append(ClusterBy(want.name, keep, want.clustered_by, False, want.origin))
        return
    diff.actions.append(ClusterBy(want.name, have.clustered_by, want.clustered_by, bool(released), want.origin))

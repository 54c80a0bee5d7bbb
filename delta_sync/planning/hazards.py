"""Hazards: the classes of risk a planned action carries (`Hazard`: which are allowable, which a probe of the
data decides), a finding of one on an action (`Finding`), what stops apply and how to unblock it (`Block`),
and the whole verdict on a plan (`Assessment`: findings, probes, blocks, protocol changes, rehearsals).

Pure. hazard_rules finds them, assessment decides what blocks apply.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from delta_sync.model.catalog import ProbeResult
from delta_sync.model.state import (
    Allow,
    Origin,
    TableName,
)
from delta_sync.planning.compatibility import protocol
from delta_sync.planning.rehearsal import Rehearsal


class Hazard(StrEnum):
    """The class of risk a planned change carries: what `--allow`, an environment's `allow:` and `deny:`, and a
    spec's `allow:` name. Each member's docstring is its description in the documentation (docs/hooks)."""

    DESTRUCTIVE = "destructive"
    """Data becomes unreachable: dropping a column, a table or a view."""
    DATA_DEPENDENT = "data-dependent"
    """The change can fail on the rows already there: a new CHECK or a NOT NULL on an existing column of a table
    with rows, a new or changed primary or foreign key on a table with rows, a backfill or a converted type."""
    IRREVERSIBLE = "irreversible"
    """A protocol upgrade or table feature that cannot simply be undone: any table feature a change adds to an
    existing table (column mapping, type widening, column defaults, change data feed, deletion vectors, a VARIANT or
    timestamp_ntz column, ...), `DROP NOT NULL`, `DROP FEATURE`."""
    BREAKING = "breaking"
    """Readers or streams downstream may break: a rename, a type widening, a type converted by a rewrite, a NOT NULL
    loosened, a column dropped or moved, a view the change breaks."""
    UNSUPPORTED = "unsupported"
    """The change cannot be done at all: a generated or identity column changed, a rewrite of a table that cannot be
    rewritten, clustered to partitioned, a rename the catalog refuses. The finding says the way out."""
    REWRITE = "rewrite"
    """The statement rewrites data files: its cost grows with the table, concurrent writers may conflict, streaming
    readers see an overwrite. A rewrite (REPLACE TABLE ... AS SELECT) or a backfill (UPDATE of a column's NULLs)."""
    COMPATIBILITY = "compatibility"
    """A declared reader or writer (`readers:` / `writers:` in delta-sync.yaml) cannot handle a table feature the
    change turns on: column mapping for a rename held to delta-spark 1.0, deletion vectors held to delta-rs."""
    # Delta refused a statement of the plan on a shallow clone of the table (plan --rehearse).
    REHEARSAL = "rehearsal"
    """Delta refused one of the plan's statements on a shallow clone of the table (`plan --rehearse`): an invalid
    value of a `delta.*` property, a table with a feature this Delta cannot write. Change the spec."""
    # The team's policy (delta_sync.planning.team_policy): a protected table dropped, renamed, rewritten or
    # restored; a change above a size limit; a finding of a rule written in Python (`rules:`). Never allowable.
    PROTECTED = "protected"
    """The change drops, renames, rewrites or restores a protected table, or drops a protected view (`protect:` in
    the spec or in delta-sync.yaml). Lift the protection first, in a change of its own."""
    LIMIT = "limit"
    """The change is above a size limit of the environment (`limits:` in delta-sync.yaml): a rewrite, backfill or
    data check of a table bigger than allowed there. The finding shows both figures."""
    RULE = "rule"
    """A Python rule of the team's (`rules:` in delta-sync.yaml) found an error in the reviewed plan."""


ALLOWABLE = frozenset({Hazard.DESTRUCTIVE, Hazard.IRREVERSIBLE, Hazard.BREAKING, Hazard.REWRITE, Hazard.COMPATIBILITY})


# Checked against the data by a probe, then allowed when the data agrees.
PROBED = frozenset({Hazard.DATA_DEPENDENT})


@dataclass(frozen=True, slots=True)
class Finding:
    index: int
    table: TableName
    hazard: Hazard
    reason: str
    origin: Origin | None = None
    # The rule a data-dependent finding is about, to match it with its probe.
    check: str | None = None
    # The part of its action a finding is about (a property key), so it is shown on that line.
    subject: str | None = None
    # The bytes of the table a backfill updates or a data check scans, as the plan read them (shown beside it,
    # and what limits: and safe_below: compare); a rewrite's own size is in its reason.
    size_bytes: int | None = None


# ProbeResult.source of a NOT NULL rule on a column whose backfill is a literal that is not NULL: no row
# can be left NULL, so no scan is needed for it.
BY_CONSTANT_BACKFILL = "backfill"


# ProbeResult.source of a rule that apply leaves to its own ADD CONSTRAINT, run before anything of the
# table changes: Delta scans the rows then and commits nothing if one violates (api.checked_first).
CHECKED_BY_CONSTRAINT = "constraint"


@dataclass(frozen=True, slots=True)
class Block:
    finding: Finding
    why: str
    unblock: str


@dataclass(frozen=True, slots=True)
class Allowance:
    """What let an allowable finding through besides --allow and the environment's allow: (a spec's named
    allows, or the environment's safe_below:), in words (`by`), and the line that says so."""

    finding: Finding
    by: str
    origin: Origin | None = None
    allows: tuple[Allow, ...] = ()


@dataclass(frozen=True, slots=True)
class Assessment:
    findings: tuple[Finding, ...]
    probes: tuple[ProbeResult, ...]
    allowed: frozenset[Hazard]
    blocks: tuple[Block, ...]
    # Each table whose Delta protocol the plan changes (delta_sync.planning.compatibility.protocol), in plan order.
    protocols: tuple[tuple[TableName, protocol.Change], ...] = ()
    # Each table's rehearsal on a shallow clone, in plan order; None when the plan was not rehearsed.
    rehearsals: tuple[Rehearsal, ...] | None = None
    # The findings the policy let through by name or by size (team_policy), and the spec allows no change of
    # the plan matches any more.
    allowances: tuple[Allowance, ...] = ()
    stale_allows: tuple[tuple[TableName, Allow], ...] = ()

    def allowance(self, finding: Finding) -> Allowance | None:
        return next((a for a in self.allowances if a.finding == finding), None)

    def rehearsal(self, table: TableName) -> Rehearsal | None:
        return next((r for r in self.rehearsals or () if r.table == table), None)

    def protocol_change(self, table: TableName) -> protocol.Change | None:
        return next((change for name, change in self.protocols if name == table), None)

    @property
    def blocked_tables(self) -> frozenset[TableName]:
        return frozenset(b.finding.table for b in self.blocks)

    def for_action(self, index: int) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.index == index)

    def block_for(self, finding: Finding) -> Block | None:
        return next((b for b in self.blocks if b.finding == finding), None)

    def probe(self, table: TableName, check: str) -> ProbeResult | None:
        return next((p for p in self.probes if p.table == table and p.check == check), None)

"""After apply, a table that still differs from the specs is a delta-sync bug, unless another writer committed
to it since the review read it (another apply of other specs, a job): then it is named, and not an error."""

from __future__ import annotations

from collections.abc import Iterable

import pytest

from delta_sync.model.catalog import Commit
from delta_sync.model.errors import DeltaSyncError
from delta_sync.model.state import CatalogState, Column, SchemaName, Table, TableName
from delta_sync.review import execution
from tests.unit.test_apply_conflicts import RacingCatalog

T = TableName(None, "s", "t")
PLAN = "3f1c0a9b7e2d"
OURS = '{"delta-sync":{"plan":"3f1c0a9b7e2d","action":"SetProperties"}}'
THEIRS = '{"delta-sync":{"plan":"99aa00bb11cc","action":"SetProperties"}}'


class Moved(RacingCatalog):
    """The table as it is after apply, with the history given."""

    def __init__(self, table: Table, commits: list[Commit]) -> None:
        super().__init__(table, 0)
        self.commits = commits

    def read(self, names: Iterable[TableName]) -> CatalogState:
        return CatalogState({T: self.table}, frozenset({SchemaName(None, "s")}))

    def history(self, name: TableName, limit: int = 50) -> list[Commit]:
        return self.commits


WANTED = Table(T, (Column("a", "int"),), properties=(("team", "blue"),))
NOW = Table(T, (Column("a", "int"),), properties=(("team", "green"),))  # someone set it back
DESIRED = CatalogState({T: WANTED}, frozenset({SchemaName(None, "s")}))
READ = CatalogState({T: Table(T, (Column("a", "int"),), version=7)}, frozenset({SchemaName(None, "s")}))


def test_a_table_another_writer_changed_since_the_review_is_named_not_an_error() -> None:
    commits = [
        Commit(9, "2026-11-27 06:00:02", "SET TBLPROPERTIES", metadata=THEIRS, engine="Apache-Spark/4.2.0"),
        Commit(8, "2026-11-27 06:00:01", "SET TBLPROPERTIES", metadata=OURS),
    ]
    others: list[str] = []
    remaining = execution.verify_converged(Moved(NOW, commits), DESIRED, (), PLAN, READ, others)
    assert not remaining.is_empty  # the next plan shows it
    assert len(others) == 1
    assert others[0].startswith("s.t was changed by another writer while apply ran (version 9")
    assert "99aa00bb11cc" in others[0]


@pytest.mark.parametrize(
    "commits",
    [
        [Commit(8, "2026-11-27 06:00:01", "SET TBLPROPERTIES", metadata=OURS)],  # only ours since the review
        [Commit(7, "2026-11-27 05:00:00", "CREATE TABLE", metadata=THEIRS)],  # theirs, but before the review
        [],
    ],
    ids=["only-ours", "theirs-before-the-review", "no-history"],
)
def test_a_difference_nobody_else_explains_is_still_a_bug(commits: list[Commit]) -> None:
    others: list[str] = []
    with pytest.raises(DeltaSyncError, match="This is a delta-sync bug"):
        execution.verify_converged(Moved(NOW, commits), DESIRED, (), PLAN, READ, others)
    assert others == []


def test_without_the_plan_id_nothing_is_excused() -> None:
    commits = [Commit(9, "2026-11-27 06:00:02", "SET TBLPROPERTIES", metadata=THEIRS)]
    with pytest.raises(DeltaSyncError, match="This is a delta-sync bug"):
        execution.verify_converged(Moved(NOW, commits), DESIRED)


def test_a_converged_catalog_reads_no_history() -> None:
    class NoHistory(Moved):
        def history(self, name: TableName, limit: int = 50) -> list[Commit]:
            raise AssertionError("history read for a converged table")

    others: list[str] = []
    assert execution.verify_converged(NoHistory(WANTED, []), DESIRED, (), PLAN, READ, others).is_empty
    assert others == []

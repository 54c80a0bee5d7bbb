"""New rules over unchanged columns run first, as one wave, and are their own data check at apply."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import pytest

from delta_sync.model.catalog import ProbeResult, StatementFailed
from delta_sync.model.errors import DeltaSyncError, ExecutionError
from delta_sync.model.failures import EngineFailure
from delta_sync.model.state import CatalogState, Check, Column, PrimaryKey, SchemaName, Table, TableName
from delta_sync.planning import hazards
from delta_sync.planning.actions import AddCheck
from delta_sync.planning.diff import planner
from delta_sync.planning.statements import Kind, Statement, checked_first
from delta_sync.render import text as render
from delta_sync.review import execution, pipeline
from tests.unit.test_parallel_apply import SlowCatalog
from tests.unit.test_render import text_of


def stmt(table: str, kind: Kind, sql: str) -> Statement:
    return Statement(table, kind, sql, sql.split()[-1] if kind is Kind.ADD_CHECK else None)


def test_checked_first_are_the_constraints_that_lead_their_table() -> None:
    work = [
        stmt("s", Kind.CREATE_SCHEMA, "CREATE SCHEMA s"),
        stmt("s.a", Kind.ADD_CHECK, "a check a1"),
        stmt("s.a", Kind.ADD_CHECK, "a check a2"),
        stmt("s.a", Kind.ADD_COLUMNS, "a columns"),
        stmt("s.a", Kind.ADD_CHECK, "a check a3"),  # after a change of its table: not first
        stmt("s.b", Kind.DROP_CHECK, "b drop old"),
        stmt("s.b", Kind.ADD_CHECK, "b check old"),  # a replacement: its old version went first
        stmt("s.c", Kind.CREATE_TABLE, "c create"),
        stmt("s.c", Kind.ADD_CHECK, "c check c1"),  # a new table's rule comes after CREATE TABLE
    ]
    assert checked_first(work) == {1, 2}


@pytest.mark.parametrize("parallel", [1, 4])
def test_leading_constraints_of_every_table_run_before_any_other_change(parallel: int) -> None:
    work = [stmt("s", Kind.CREATE_SCHEMA, "CREATE SCHEMA s")]
    for t in range(5):
        work += [
            stmt(f"s.t{t}", Kind.ADD_CHECK, f"t{t} check c{t}"),
            stmt(f"s.t{t}", Kind.ADD_COLUMNS, f"t{t} columns"),
            stmt(f"s.t{t}", Kind.SET_PROPERTIES, f"t{t} properties"),
        ]
    catalog = SlowCatalog(delay=0.005)
    assert execution.run_statements(catalog, work, "p", parallel=parallel) == len(work)
    checks = [i for i, s in enumerate(catalog.ran) if " check " in s]
    assert catalog.ran[0] == "CREATE SCHEMA s"
    assert checks == list(range(1, 6))
    for t in range(5):  # each table's own order still holds
        mine = [s for s in catalog.ran if s.startswith(f"t{t} ")]
        assert mine == [f"t{t} check c{t}", f"t{t} columns", f"t{t} properties"]


@pytest.mark.parametrize("parallel", [1, 4])
def test_a_violated_leading_constraint_stops_apply_before_any_other_change(parallel: int) -> None:
    work = [stmt("s", Kind.CREATE_SCHEMA, "CREATE SCHEMA s")]
    for t in range(4):
        work += [
            stmt(f"s.t{t}", Kind.ADD_CHECK, f"t{t} check c{t}"),
            stmt(f"s.t{t}", Kind.ADD_COLUMNS, f"t{t} columns"),
        ]
    catalog = SlowCatalog(fail="t2 check", delay=0.005)
    with pytest.raises(ExecutionError) as raised:
        execution.run_statements(catalog, work, "p", parallel=parallel)
    # Nothing but constraints (which hold) ran on any table.
    assert not [s for s in catalog.ran if "columns" in s]
    assert set(raised.value.applied) <= {"CREATE SCHEMA s", "t0 check c0", "t1 check c1", "t3 check c3"}
    if parallel == 1:  # one at a time: exactly the tables before t2
        assert raised.value.applied == ("CREATE SCHEMA s", "t0 check c0", "t1 check c1")
    assert "t2 check c2" in str(raised.value)


T = TableName(None, "s", "t")


class ProbingCatalog(SlowCatalog):
    """A table with rows; records which rules were probed."""

    def __init__(self) -> None:
        super().__init__()
        self.probed: list[str] = []

    def read(self, names: Iterable[TableName]) -> CatalogState:
        table = Table(T, (Column("a", "int"), Column("b", "string")), num_files=3)
        return CatalogState({T: table}, frozenset({SchemaName(None, "s")}))

    def probe(
        self, table: TableName, checks: Sequence[Check], relation: str, primary_key: PrimaryKey | None = None
    ) -> list[ProbeResult]:
        self.probed += [c.name for c in checks]
        return [ProbeResult(table, c.name, 0) for c in checks]


def desired() -> CatalogState:
    # `a_pos` reads an unchanged column (first); `c_set` reads the column the plan adds (last).
    columns = (Column("a", "int"), Column("b", "string"), Column("c", "string"))
    checks = (Check("a_pos", "a > 0"), Check("c_set", "c IS NOT NULL OR a > 1"))
    return CatalogState({T: Table(T, columns, checks=checks)})


def test_apply_leaves_a_leading_rule_to_its_constraint_and_probes_the_others() -> None:
    catalog = ProbingCatalog()
    reviewed = pipeline.review(catalog, desired(), applying=True)
    assert catalog.probed == ["c_set"]
    by_rule = {p.check: p for p in reviewed.assessment.probes}
    assert by_rule["a_pos"].source == hazards.CHECKED_BY_CONSTRAINT
    assert by_rule["a_pos"].violations is None
    assert by_rule["c_set"].violations == 0
    assert not reviewed.blocked
    text = " ".join(text_of(render.render_text(reviewed.plan, reviewed.assessment)).split())
    assert "checked by its own ADD CONSTRAINT, first: a violation stops apply before other changes" in text


def test_plan_probes_every_rule() -> None:
    catalog = ProbingCatalog()
    reviewed = pipeline.review(catalog, desired())
    assert catalog.probed == ["a_pos", "c_set"]
    assert {p.source for p in reviewed.assessment.probes} == {"scan"}


class WriterMidApply(ProbingCatalog):
    """The first ADD CONSTRAINT loses a commit race to a writer that changed `a`'s comment meanwhile."""

    def __init__(self) -> None:
        super().__init__()
        self.comment = "amount"

    def read(self, names: Iterable[TableName]) -> CatalogState:
        table = Table(T, (Column("a", "int", comment=self.comment), Column("b", "string")), num_files=3)
        return CatalogState({T: table}, frozenset({SchemaName(None, "s")}))

    def execute(self, statement: str, metadata: str | None = None) -> None:
        if "ADD CONSTRAINT" in statement and self.comment == "amount":
            self.comment = "changed by another writer"
            raise StatementFailed(EngineFailure("DELTA_METADATA_CHANGED", "MetadataChangedException"))
        super().execute(statement, metadata)


def test_a_rule_left_unprobed_that_a_re_plan_moves_after_other_changes_stops_apply() -> None:
    catalog = WriterMidApply()
    want = CatalogState(
        {T: Table(T, (Column("a", "int", comment="amount"), Column("b", "string")), checks=(Check("a_pos", "a > 0"),))}
    )
    reviewed = pipeline.review(catalog, want, applying=True)
    assert catalog.probed == []  # left to its ADD CONSTRAINT
    with pytest.raises(DeltaSyncError, match="changed while apply ran: its new rule `a_pos`") as raised:
        execution.apply_converging(catalog, want, reviewed.plan, sleep=lambda _s: None)
    assert "Re-run apply" in str(raised.value)
    assert catalog.ran == []  # the comment change (now first) did not run either


@pytest.mark.parametrize("column", ["2nd_value", "1_col", "9"])
def test_a_rule_over_a_retyped_column_whose_name_starts_with_a_digit_goes_last(column: str) -> None:
    # The tokenizer splits `2nd_value` in two; the rule must still be seen to read it.
    have = Table(T, (Column(column, "int"),), properties=(("delta.enableTypeWidening", "true"),))
    want = Table(
        T,
        (Column(column, "bigint"),),
        checks=(Check("v_pos", f"{column} > 0"),),
        properties=(("delta.enableTypeWidening", "true"),),
    )
    actions = planner.diff_table(have, want)
    rule = actions[-1]
    assert isinstance(rule, AddCheck)
    assert not rule.first

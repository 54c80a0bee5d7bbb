"""Rehearsal decisions (pure) and the rehearsal loop on a recording catalog: what runs where, what
blocks, what a catalog that takes no new tables gives. The real runs are in tests/spark/test_rehearsal*.py."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Sequence
from datetime import timedelta

import pytest

from delta_sync.model.catalog import StatementFailed
from delta_sync.model.errors import DeltaSyncError
from delta_sync.model.failures import EngineFailure
from delta_sync.model.state import CatalogState, SchemaName, Table, TableName
from delta_sync.planning import rehearsal
from delta_sync.planning.actions import AddColumns, CreateSchema, CreateTable, RestoreTable
from delta_sync.planning.diff import planner
from delta_sync.planning.hazard_policy import assess
from delta_sync.planning.hazards import ALLOWABLE, Hazard
from delta_sync.planning.rehearsal import Outcome, Rehearsal
from delta_sync.review import clones, environments
from delta_sync.specs.settings import Environment
from tests.unit.builders import WithoutViews, column, live, name, schema, state, table

NOW = rehearsal.now()


def test_scratch_schema_default_configured_and_with_catalog() -> None:
    assert rehearsal.scratch_schema(name("shop.orders"), None) == SchemaName(None, "shop__delta_sync_rehearsal")
    assert rehearsal.scratch_schema(name("main.shop.orders"), None) == SchemaName("main", "shop__delta_sync_rehearsal")
    assert rehearsal.scratch_schema(name("main.shop.orders"), "Scratch") == SchemaName("main", "scratch")
    assert rehearsal.scratch_schema(name("shop.orders"), "dev.scratch") == SchemaName("dev", "scratch")
    assert rehearsal.owns_schema(SchemaName(None, "shop__delta_sync_rehearsal"))
    assert not rehearsal.owns_schema(SchemaName(None, "scratch"))


@pytest.mark.parametrize("value", ["a b", "a.b.c", "1x", "", "x-y"])
def test_a_bad_rehearsal_schema_is_refused_with_what_to_write(value: str) -> None:
    assert rehearsal.valid_schema_setting(value) is not None
    with pytest.raises(ValueError, match="not a schema name"):
        Environment(name="x", rehearsal_schema=value)


def test_clone_names_keep_the_plan_id_within_128_characters() -> None:
    scratch = schema("shop__delta_sync_rehearsal")
    assert rehearsal.clone_name(name("shop.orders"), scratch, "feedc0de").name == "orders__rehearsal_feedc0de"
    long = rehearsal.clone_name(TableName(None, "shop", "t" * 200), scratch, "0123456789abcdef")
    assert len(long.name) == 128
    assert long.name.endswith("__rehearsal_0123456789abcdef")


@pytest.mark.parametrize(
    ("host", "alive", "age", "left_over"),
    [
        ("here", False, timedelta(0), True),  # killed here: its process is gone
        ("here", True, timedelta(days=3), False),  # still running here, however long
        ("there", None, timedelta(hours=1), False),  # elsewhere and recent: may still run
        ("there", None, timedelta(hours=7), True),  # elsewhere and old
    ],
)
def test_a_clone_is_left_over_once_its_rehearsal_cannot_be_running(
    host: str, alive: bool | None, age: timedelta, left_over: bool
) -> None:
    stamp = rehearsal.stamp("p", name("s.t"), host, 42, NOW - age)

    def running(pid: int) -> bool:
        assert alive is not None, "only a clone stamped on this host asks for its process"
        assert pid == 42
        return alive

    assert rehearsal.is_leftover(stamp, "here", running, NOW) is left_over


def test_a_stamp_delta_sync_did_not_write_counts_as_left_over() -> None:
    assert rehearsal.is_leftover("not json", "here", lambda _pid: True, NOW)
    assert rehearsal.is_leftover('{"started": "yesterday"}', "here", lambda _pid: True, NOW)


def test_retarget_points_every_action_at_the_clone_and_stamps_a_new_table() -> None:
    new = table("s.t", column("id", "bigint"))
    clone = name("s__delta_sync_rehearsal.t__rehearsal_p")
    actions = (CreateSchema(schema("s")), CreateTable(new), AddColumns(name("s.t"), (column("x", "int"),)))
    moved = rehearsal.retarget(actions, clone, "{}")
    assert [type(a).__name__ for a in moved] == ["CreateTable", "AddColumns"]
    assert all(a.name == clone for a in moved)  # type: ignore[union-attr]
    created = moved[0]
    assert isinstance(created, CreateTable)
    assert (rehearsal.STAMP, "{}") in created.table.properties
    assert rehearsal.as_source(created.table, name("s.t")) == new


def test_a_rehearsal_round_trips_through_json() -> None:
    failed = Rehearsal(name("s.t"), Outcome.FAILED, 1.25, statement="ALTER TABLE x", error_class="E", message="m")
    back = Rehearsal.from_json(failed.as_json())
    assert back == dataclasses.replace(failed, seconds=1.25)
    assert failed.as_json()["rehearsed"] is True
    assert Rehearsal(name("s.t"), Outcome.NOT_POSSIBLE, 0.0, reason="r").as_json()["rehearsed"] is False


def test_a_failed_rehearsal_blocks_its_table_and_cannot_be_allowed() -> None:
    current = state(live(table("s.t", column("id", "bigint")), version=3))
    desired = state(table("s.t", column("id", "bigint"), column("x", "int")))
    plan = planner.plan(current, desired)
    failed = Rehearsal(name("s.t"), Outcome.FAILED, 1.0, statement="ALTER ...", index=0, error_class="E", message="no")
    assessment = assess(plan, current, (), ALLOWABLE, (), [failed])
    (block,) = assessment.blocks
    assert block.finding.hazard is Hazard.REHEARSAL
    assert block.why == "Delta refused `ALTER ...`: E: no (rehearsed on a shallow clone of the table)"
    assert Hazard.REHEARSAL not in ALLOWABLE
    with pytest.raises(DeltaSyncError, match="cannot be allowed"):
        environments.allowed_hazards(["rehearsal"], Environment(name="local"))
    passed = dataclasses.replace(failed, outcome=Outcome.PASSED)
    assert not assess(plan, current, (), frozenset(), (), [passed]).blocks
    assert assess(plan, current, (), frozenset(), ()).rehearsals is None


class Recording(WithoutViews):
    """A catalog that records every statement; `refuse` maps a pattern to the failure it raises."""

    max_parallel = 1

    def __init__(self, tables: CatalogState, refuse: dict[str, EngineFailure] | None = None) -> None:
        self.tables = dict(tables.tables)
        self.refuse = refuse or {}
        self.ran: list[str] = []

    def execute(self, statement: str, metadata: str | None = None) -> None:
        self.ran.append(statement)
        for pattern, failure in self.refuse.items():
            if re.search(pattern, statement):
                raise StatementFailed(failure)
        clone = re.match(r"CREATE TABLE (\S+) SHALLOW CLONE (\S+)", statement)
        if clone:
            target, source = (TableName.parse(t.replace("`", "")) for t in clone.groups())
            self.tables[target] = dataclasses.replace(self.tables[source], name=target)

    def read(self, names: Iterable[TableName]) -> CatalogState:
        return CatalogState({n: self.tables[n] for n in names if n in self.tables})

    def list_tables(self, schema: SchemaName) -> list[TableName]:
        return sorted(n for n in self.tables if n.schema_name == schema)


def _rehearse(catalog: Recording, current: CatalogState, desired: CatalogState) -> Sequence[Rehearsal]:
    plan = planner.plan(current, desired)
    return clones.rehearse(catalog, plan, current, desired, "p1", None)  # type: ignore[arg-type]


def _have() -> Table:
    return live(table("s.t", column("id", "bigint")), version=7, size_bytes=10)


def test_the_source_is_only_read_and_every_clone_is_dropped() -> None:
    current = state(_have())
    desired = state(table("s.t", column("id", "bigint"), column("x", "int")))
    # The clone keeps the source's columns only: the recording catalog applies no ALTER, so it differs.
    catalog = Recording(current)
    (found,) = _rehearse(catalog, current, desired)
    clone = "`s__delta_sync_rehearsal`.`t__rehearsal_p1`"
    assert catalog.ran[0] == "CREATE SCHEMA IF NOT EXISTS `s__delta_sync_rehearsal`"
    assert catalog.ran[1].startswith(f"CREATE TABLE {clone} SHALLOW CLONE `s`.`t` VERSION AS OF 7 TBLPROPERTIES (")
    assert catalog.ran[2] == f"ALTER TABLE {clone} ADD COLUMNS (`x` int)"
    assert f"DROP TABLE IF EXISTS {clone}" in catalog.ran
    # The source's name appears only as what is cloned.
    assert [s for s in catalog.ran if "`s`.`t`" in s] == [catalog.ran[1]]
    # The statements ran, but the clone (never really altered here) still lacks `x`: caught as a bug.
    assert found.outcome is Outcome.FAILED
    assert found.reason is not None
    assert "AddColumns" in found.reason


def test_a_refused_statement_is_named_with_its_action_and_the_plans_own_sql() -> None:
    current = state(_have())
    desired = state(table("s.t", column("id", "bigint"), column("x", "int")))
    refusal = EngineFailure("DELTA_X", "[DELTA_X] no such thing.")
    catalog = Recording(current, {"ADD COLUMNS": refusal})
    (found,) = _rehearse(catalog, current, desired)
    assert found.outcome is Outcome.FAILED
    assert found.statement == "ALTER TABLE `s`.`t` ADD COLUMNS (`x` int)"  # the source's, as apply would run it
    assert (found.index, found.error_class, found.message) == (0, "DELTA_X", "no such thing")


def test_a_catalog_that_takes_no_new_tables_means_no_rehearsal_not_a_block() -> None:
    current = state(_have())
    desired = state(table("s.t", column("id", "bigint"), column("x", "int")))
    denied = EngineFailure("PERMISSION_DENIED", "User does not have CREATE SCHEMA on catalog")
    catalog = Recording(current, {"CREATE SCHEMA": denied})
    (found,) = _rehearse(catalog, current, desired)
    assert found.outcome is Outcome.NOT_POSSIBLE
    assert found.reason is not None
    assert "cannot create the scratch schema" in found.reason
    plan = planner.plan(current, desired)
    assert not assess(plan, current, (), frozenset(), (), [found]).blocks
    assert found.text().startswith("not rehearsed: cannot create the scratch schema s__delta_sync_rehearsal")


def test_a_rollbacks_restore_is_not_rehearsed() -> None:
    assert rehearsal.why_not((RestoreTable(name("s.t"), 3, "p", (4,)),)) is not None

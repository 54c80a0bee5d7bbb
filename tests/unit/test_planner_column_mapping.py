"""Names Delta takes only with column mapping (spaces, any of `,;{}()=`, newline, tab) are known at
plan time: a new table is created with column mapping on (irreversible, blocked unless allowed), and
a new column of an existing table first enables it, as a rename or a drop does."""

from __future__ import annotations

import pytest

from delta_sync.model.state import Column
from delta_sync.planning import ddl
from delta_sync.planning.actions import AddColumns, CreateTable, EnableFeature
from delta_sync.planning.diff.conventions import COLUMN_MAPPING, mapping_only_names
from delta_sync.planning.diff.planner import plan
from delta_sync.planning.hazard_policy import assess
from delta_sync.planning.hazards import Hazard
from tests.unit.builders import col, state, table

MODE = "delta.columnMapping.mode"


@pytest.mark.parametrize("odd", ["order id", "a,b", "a;b", "a{b", "a}b", "a(b", "a)b", "a=b", "a\nb", "a\tb"])
def test_names_delta_takes_only_with_column_mapping(odd: str) -> None:
    assert mapping_only_names([Column(odd, "int")]) == [odd]


@pytest.mark.parametrize("fine", ["order_id", "a.b", "a-b", "a:b", "it's", "Ünïcode"])
def test_names_delta_takes_as_they_are(fine: str) -> None:
    assert mapping_only_names([Column(fine, "int")]) == []


def test_nested_field_names_count() -> None:
    nested = Column("s", "struct<`x y`:int,z:array<struct<`p=q`:int>>,m:map<string,struct<`k v`:int>>>")
    assert mapping_only_names([nested]) == ["s.x y", "s.z.p=q", "s.m.k v"]


def test_a_new_table_with_such_a_name_is_created_with_column_mapping() -> None:
    want = table("s.t", col("id", "bigint"), col("order id", "bigint"))
    result = plan(state(schemas=("s",)), state(want))
    (create,) = [a for a in result.actions if isinstance(a, CreateTable)]
    assert create.table.property_map[MODE] == "name"
    (statement,) = ddl.to_sql(create)
    assert "TBLPROPERTIES ('delta.columnMapping.mode' = 'name')" in statement


def test_column_mapping_at_create_is_irreversible_and_blocked_unless_allowed() -> None:
    current = state(schemas=("s",))
    result = plan(current, state(table("s.t", col("order id", "bigint"))))
    blocked = assess(result, current, (), allowed=())
    (block,) = blocked.blocks
    assert block.finding.hazard is Hazard.IRREVERSIBLE
    assert "`order id`" in block.finding.reason
    assert MODE in block.finding.reason
    assert assess(result, current, (), allowed=(Hazard.IRREVERSIBLE,)).blocks == ()


def test_a_new_table_with_plain_names_is_created_as_declared() -> None:
    want = table("s.t", col("id", "bigint"))
    result = plan(state(schemas=("s",)), state(want))
    assert result.actions == (CreateTable(want),)
    assert assess(result, state(schemas=("s",)), (), allowed=()).blocks == ()


def test_a_declared_mode_is_kept() -> None:
    want = table("s.t", col("order id", "bigint"), properties={MODE: "id"})
    (create,) = [a for a in plan(state(schemas=("s",)), state(want)).actions if isinstance(a, CreateTable)]
    assert create.table.properties == ((MODE, "id"),)


def test_adding_such_a_column_enables_column_mapping_first() -> None:
    have = table("s.t", col("id", "bigint"))
    want = table("s.t", col("id", "bigint"), col("order id", "bigint"))
    actions = plan(state(have), state(want)).actions
    assert [type(a) for a in actions] == [EnableFeature, AddColumns]
    enable = actions[0]
    assert isinstance(enable, EnableFeature)
    assert (enable.key, enable.value) == COLUMN_MAPPING
    assert "`order id`" in enable.reason


def test_adding_such_a_struct_field_enables_column_mapping_first() -> None:
    have = table("s.t", col("s", "struct<a:int>"))
    want = table("s.t", col("s", "struct<a:int,`b c`:int>"))
    actions = plan(state(have), state(want)).actions
    assert [type(a) for a in actions] == [EnableFeature, AddColumns]


def test_adding_such_a_column_to_a_mapped_table_needs_nothing_more() -> None:
    have = table("s.t", col("id", "bigint"), properties={MODE: "name"})
    want = table("s.t", col("id", "bigint"), col("order id", "bigint"), properties={MODE: "name"})
    assert [type(a) for a in plan(state(have), state(want)).actions] == [AddColumns]

"""Column order in the diff (delta_sync.planning.diff.column_diff): additions at their place, the fewest moves, and the
order a table ends with after the statements, replayed here as Delta applies them."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from hypothesis import given
from hypothesis import strategies as st

from delta_sync.planning import ddl
from delta_sync.planning.actions import Action, AddColumns, DropColumns, MoveColumn, Place, RenameColumn
from delta_sync.planning.diff.planner import diff_table, plan
from delta_sync.planning.hazard_rules import find
from delta_sync.planning.hazards import Hazard
from tests.unit.builders import col, name, state, table

T = name("s.t")


def replay(order: list[str], actions: Sequence[Action]) -> list[str]:
    """The table's column order after `actions`, by Delta's rules for ADD COLUMNS ... FIRST | AFTER and
    ALTER COLUMN ... FIRST | AFTER (a place may name a column added earlier in the same statement)."""
    order = list(order)
    for action in sorted(actions, key=lambda a: a.phase):
        match action:
            case RenameColumn():
                order[order.index(action.before)] = action.after
            case DropColumns():
                gone = {c.name for c in action.columns}
                order = [c for c in order if c not in gone]
            case AddColumns():
                for i, column in enumerate(action.columns):
                    _insert(order, column.name, action.place_of(i))
            case MoveColumn():
                order.remove(action.column)
                _insert(order, action.column, action.place)
    return order


def _insert(order: list[str], column: str, place: Place | None) -> None:
    if place is None:
        order.append(column)
    elif place.after is None:
        order.insert(0, column)
    else:
        order.insert(order.index(place.after) + 1, column)


def test_a_column_inserted_in_the_middle_is_added_at_its_place() -> None:
    have = table("s.t", col("id"), col("amount"))
    want = table("s.t", col("id"), col("currency"), col("amount"))
    assert diff_table(have, want) == [AddColumns(T, (col("currency"),), places=(Place("id"),))]
    assert ddl.to_sql(AddColumns(T, (col("currency"),), places=(Place("id"),))) == (
        "ALTER TABLE `s`.`t` ADD COLUMNS (`currency` string AFTER `id`)",
    )


def test_columns_added_at_the_end_need_no_place_and_first_says_first() -> None:
    have = table("s.t", col("b"))
    assert diff_table(have, table("s.t", col("b"), col("c"), col("d"))) == [AddColumns(T, (col("c"), col("d")))]
    first = diff_table(have, table("s.t", col("a"), col("b")))
    assert first == [AddColumns(T, (col("a"),), places=(Place(None),))]
    assert ddl.to_sql(first[0]) == ("ALTER TABLE `s`.`t` ADD COLUMNS (`a` string FIRST)",)


def test_a_move_is_one_statement_that_names_its_neighbour() -> None:
    have = table("s.t", col("id"), col("amount"), col("currency"))
    want = table("s.t", col("id"), col("currency"), col("amount"))
    actions = diff_table(have, want)
    assert len(actions) == 1
    assert ddl.to_sql(actions[0]) in (
        ("ALTER TABLE `s`.`t` ALTER COLUMN `currency` AFTER `id`",),
        ("ALTER TABLE `s`.`t` ALTER COLUMN `amount` AFTER `currency`",),
    )
    assert ddl.to_sql(MoveColumn(T, "we ird", Place(None))) == ("ALTER TABLE `s`.`t` ALTER COLUMN `we ird` FIRST",)


def test_a_reorder_with_a_rename_moves_the_column_under_its_new_name() -> None:
    have = table("s.t", col("a"), col("b"), col("c"))
    want = table("s.t", dataclasses.replace(col("cc"), renamed_from="c"), col("a"), col("b"))
    actions = diff_table(have, want)
    assert replay(["a", "b", "c"], actions) == ["cc", "a", "b"]
    assert MoveColumn(T, "cc", Place(None)) in actions


def test_a_move_is_breaking_and_an_addition_at_its_place_is_not() -> None:
    have = table("s.t", col("id"), col("amount"))
    want = table("s.t", col("amount"), col("note"), col("id"))
    result = plan(state(have), state(want))
    (finding,) = find(result, state(have))
    assert finding.hazard is Hazard.BREAKING
    # Kept columns move before the additions, so `id` goes after `amount`, and `note` is then added between them.
    assert finding.reason.startswith("`id` moves after amount")
    assert "by position" in finding.reason
    inserted = plan(state(have), state(table("s.t", col("id"), col("note"), col("amount"))))
    assert find(inserted, state(have)) == ()


names = st.lists(st.sampled_from("abcdefghij"), unique=True, max_size=8)


@given(names, names)
def test_any_spec_order_is_reached_with_the_fewest_moves(before: list[str], after: list[str]) -> None:
    have = table("s.t", *(col(n) for n in before)) if before else table("s.t", col("z"))
    want = table("s.t", *(col(n) for n in after)) if after else table("s.t", col("z"))
    actions = [a for a in diff_table(have, want) if isinstance(a, AddColumns | DropColumns | MoveColumn)]
    start = [c.name for c in have.columns]
    assert replay(start, actions) == [c.name for c in want.columns]
    kept = [n for n in start if n in {c.name for c in want.columns}]
    target = [c.name for c in want.columns if c.name in kept]
    moves = sum(isinstance(a, MoveColumn) for a in actions)
    assert moves <= len(kept) - _lis(kept, target)


def _lis(order: list[str], target: list[str]) -> int:
    """The longest run of `order` already in `target`'s order (quadratic: the test's own reckoning)."""
    rank = [target.index(n) for n in order]
    best = [1] * len(rank)
    for i in range(len(rank)):
        for j in range(i):
            if rank[j] < rank[i]:
                best[i] = max(best[i], best[j] + 1)
    return max(best, default=0)


def test_struct_fields_move_and_are_added_at_their_place() -> None:
    have = table("s.t", col("id"), col("s", "struct<x:int,y:int>"))
    want = table("s.t", col("id"), col("s", "struct<y:int,z:string,x:int>"))
    actions = diff_table(have, want)
    statements = [sql for a in sorted(actions, key=lambda a: a.phase) for sql in ddl.to_sql(a)]
    assert statements == [
        "ALTER TABLE `s`.`t` ALTER COLUMN `s`.`x` AFTER `y`",
        "ALTER TABLE `s`.`t` ADD COLUMNS (`s`.`z` string AFTER `y`)",
    ] or statements == [
        "ALTER TABLE `s`.`t` ALTER COLUMN `s`.`y` FIRST",
        "ALTER TABLE `s`.`t` ADD COLUMNS (`s`.`z` string AFTER `y`)",
    ]


def test_struct_fields_in_another_order_are_a_move_even_under_a_generated_column() -> None:
    g = dataclasses.replace(col("g", "int"), generated="s.x + 1")
    have = table("s.t", col("s", "struct<x:int,y:int>"), g)
    want = table("s.t", col("s", "struct<y:int,x:int>"), g)
    assert [type(a) for a in diff_table(have, want)] == [MoveColumn]


def test_column_order_ignore_leaves_struct_fields_too() -> None:
    have = table("s.t", col("s", "struct<x:int,y:int>"))
    want = table("s.t", col("s", "struct<y:int,x:int>"))
    result = plan(state(have), dataclasses.replace(state(want), column_order=False))
    assert result.actions == ()
    assert result.unordered == (T,)

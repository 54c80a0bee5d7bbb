"""The checks of one spec file's entries (delta_sync.specs.entry_checks): a NOT NULL field inside an array or map,
which Delta refuses at apply (DELTA_NESTED_NOT_NULL_CONSTRAINT), is a problem at the column's type, with the
field's path and the way out."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from delta_sync.model.errors import SpecError, SpecProblem
from delta_sync.specs.spec_files import load_spec_files


def problems(tmp_path: Path, text: str) -> tuple[SpecProblem, ...]:
    path = tmp_path / "spec.yaml"
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    with pytest.raises(SpecError) as info:
        load_spec_files([path])
    return info.value.problems


def spec(type_: str, name: str = "items") -> str:
    return f'table: s.t\ncolumns:\n  - name: id\n    type: bigint\n  - name: "{name}"\n    type: "{type_}"\n'


def test_a_not_null_field_in_an_array_is_a_problem_at_the_columns_type(tmp_path: Path) -> None:
    (problem,) = problems(tmp_path, spec("array<struct<qty: int not null, sku: string>>"))

    assert problem.line == 6
    assert problem.message == (
        "column `items`: field `items.element.qty` is NOT NULL inside an array or map, which Delta refuses "
        "(DELTA_NESTED_NOT_NULL_CONSTRAINT)"
    )
    assert problem.hint == (
        "make `qty` nullable: remove its NOT NULL from the type; to keep it required, add a CHECK: checks: "
        '{items_qty_not_null: "coalesce(size(array_compact(array_compact(items).qty)) = '
        'size(array_compact(items)), true)"}'
    )


@pytest.mark.parametrize(
    ("type_", "path"),
    [
        ("map<string, struct<a: int not null>>", "items.value.a"),
        ("map<struct<a: int not null>, int>", "items.key.a"),
        ("struct<x: array<struct<a: int not null>>>", "items.x.element.a"),
        ("array<array<struct<a: int not null>>>", "items.element.element.a"),
    ],
)
def test_every_way_into_an_array_or_map_is_named_by_its_path(tmp_path: Path, type_: str, path: str) -> None:
    (problem,) = problems(tmp_path, spec(type_))

    assert f"field `{path}` is NOT NULL inside an array or map" in problem.message
    assert "checks: {items_a_not_null: " in problem.hint


def test_each_not_null_field_is_its_own_problem(tmp_path: Path) -> None:
    found = problems(tmp_path, spec("array<struct<`the s`: struct<a: int not null> not null>>", name="my col"))

    assert [p.line for p in found] == [6, 6]
    # Names that need them keep their backquotes, as Delta's ALTER COLUMN writes the path.
    assert "field `my col`.element.`the s` is NOT NULL" in found[0].message
    assert "field `my col`.element.`the s`.a is NOT NULL" in found[1].message
    assert "checks: {my_col_the_s_not_null: " in found[0].hint
    assert "array_compact(array_compact(`my col`).`the s`).a" in found[1].hint


def test_a_field_inside_an_array_of_maps_has_no_check_to_offer(tmp_path: Path) -> None:
    (problem,) = problems(tmp_path, spec("array<map<string, struct<a: int not null>>>"))

    assert "field `items.element.value.a` is NOT NULL" in problem.message
    assert problem.hint == (
        "make `a` nullable: remove its NOT NULL from the type; no CHECK reaches a field inside an array of maps, "
        "so the jobs that write the table must keep it"
    )


@pytest.mark.parametrize(
    "type_",
    [
        "struct<a: int not null, b: struct<c: string not null> not null>",
        "map<string, int>",
        "map<struct<a: int>, array<struct<b: int>>>",
        "array<struct<a: int>>",
    ],
)
def test_what_delta_accepts_passes(tmp_path: Path, type_: str) -> None:
    path = tmp_path / "spec.yaml"
    path.write_text(spec(type_), encoding="utf-8")

    (table,) = load_spec_files([path]).tables.values()

    assert table.columns[1].name == "items"


def test_the_problem_comes_with_the_files_other_problems(tmp_path: Path) -> None:
    text = spec("array<struct<qty: int not null>>") + "partitioned_by: [nope]\n"

    found = problems(tmp_path, text)

    assert [p.line for p in found] == [6, 7]

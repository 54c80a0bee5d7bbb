"""The checks of single spec values (delta_sync.specs.spec_values): a collated string, which Delta 4.4 on
open-source Spark cannot store (DELTA_UNSUPPORTED_DATA_TYPES), is a problem at the column's type with the usual
way around it."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from delta_sync.model.errors import SpecError, SpecProblem
from delta_sync.specs.spec_files import load_spec_files
from delta_sync.specs.spec_values import Invalid, _column_type


def load(tmp_path: Path, type_: str) -> Path:
    path = tmp_path / "spec.yaml"
    text = f"""\
        table: s.t
        columns:
          - name: id
            type: bigint
          - name: email
            type: "{type_}"
        """
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def only_problem(tmp_path: Path, type_: str) -> SpecProblem:
    with pytest.raises(SpecError) as info:
        load_spec_files([load(tmp_path, type_)])
    (problem,) = info.value.problems
    return problem


def test_a_collated_string_is_a_problem_at_the_columns_type(tmp_path: Path) -> None:
    problem = only_problem(tmp_path, "string collate utf8_lcase")

    assert problem.line == 6
    assert problem.message == (
        "column `email`: type `string collate utf8_lcase`: a string with collation utf8_lcase cannot be stored: "
        "Delta 4.4 on open-source Spark refuses collated strings (DELTA_UNSUPPORTED_DATA_TYPES)"
    )
    assert problem.hint == (
        "declare it as plain string, and compare with the collation in queries or views, e.g. "
        "WHERE <column> COLLATE utf8_lcase = 'x', or WHERE lower(<column>) = lower('x')"
    )


@pytest.mark.parametrize(
    ("type_", "said"),
    [
        ("struct<domain: string collate unicode_ci>", "collation unicode_ci (at `domain` in the type)"),
        ("map<string collate utf8_lcase, int>", "collation utf8_lcase (at `key` in the type)"),
        ("array<struct<`a b`: string collate unicode>>", "collation unicode (at element.`a b` in the type)"),
    ],
)
def test_a_collated_string_inside_a_type_says_where(tmp_path: Path, type_: str, said: str) -> None:
    problem = only_problem(tmp_path, type_)

    assert problem.line == 6
    assert f"a string with {said} cannot be stored" in problem.message
    assert "DELTA_UNSUPPORTED_DATA_TYPES" in problem.message


def test_the_default_collation_is_a_plain_string(tmp_path: Path) -> None:
    (table,) = load_spec_files([load(tmp_path, "string collate UTF8_BINARY")]).tables.values()

    assert table.columns[1].type == "string"


def test_collate_on_varchar_is_a_bad_type(tmp_path: Path) -> None:
    problem = only_problem(tmp_path, "varchar(20) collate utf8_lcase")

    assert problem.message == (
        "column `email`: bad type `varchar(20) collate utf8_lcase`: COLLATE applies to string only, not to varchar(20)"
    )


def test_the_validator_keeps_the_text_as_written() -> None:
    assert _column_type("string COLLATE utf8_binary") == "string COLLATE utf8_binary"
    with pytest.raises(Invalid, match="DELTA_UNSUPPORTED_DATA_TYPES"):
        _column_type("string collate unicode")

"""`${name}` in specs: filled from the environment in use, and an undeclared name is a problem at its line."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from delta_sync.model.errors import SpecError
from delta_sync.model.state import TableName
from delta_sync.specs.project_file import load_project
from delta_sync.specs.spec_files import load_specs
from delta_sync.specs.variables import escape_vars, substitute_vars

SPEC = """\
table: shop.orders${suffix}
comment: Orders
columns:
  - name: id
    type: bigint
"""


def spec(tmp_path: Path, text: str = SPEC) -> Path:
    folder = tmp_path / "specs"
    folder.mkdir(exist_ok=True)
    (folder / "orders.yaml").write_text(textwrap.dedent(text))
    return folder


def problems(folder: Path, vars: dict[str, str] | None = None, env: str | None = "local") -> list[str]:
    with pytest.raises(SpecError) as info:
        load_specs(folder, vars, env=env)
    return [str(p).removeprefix(str(folder / "orders.yaml") + ":") for p in info.value.problems]


def test_an_undeclared_variable_in_the_table_name_is_not_a_bad_table_name(tmp_path: Path) -> None:
    assert problems(spec(tmp_path)) == ["1: undeclared variable `suffix` (declare it in envs.local.vars)"]


def test_an_undeclared_variable_names_the_environment_in_use(tmp_path: Path) -> None:
    folder = spec(tmp_path)

    assert problems(folder, {"other": "x"}, "staging") == [
        "1: undeclared variable `suffix` (declare it in envs.staging.vars)"
    ]
    assert problems(folder, env=None) == [
        "1: undeclared variable `suffix` (declare it in the vars: of the environment in delta-sync.yaml)"
    ]


def test_every_undeclared_variable_is_reported_at_its_line_with_the_other_problems(tmp_path: Path) -> None:
    text = SPEC.replace("comment: Orders", "comment: Orders in ${region}") + "    nullable: maybe\n"

    assert problems(spec(tmp_path, text)) == [
        "1: undeclared variable `suffix` (declare it in envs.local.vars)",
        "2: undeclared variable `region` (declare it in envs.local.vars)",
        "6: column `id`: `nullable` must be true or false, got string 'maybe' (write true or false, without quotes)",
    ]


def test_declared_variables_are_filled_and_an_escaped_one_is_text(tmp_path: Path) -> None:
    folder = spec(tmp_path, SPEC.replace("comment: Orders", "comment: Orders in $${suffix}, ${suffix}"))

    (table,) = load_specs(folder, {"suffix": "_ci"}, env="ci").tables.values()

    assert table.name == TableName(None, "shop", "orders_ci")
    assert table.comment == "Orders in ${suffix}, _ci"


def test_the_environment_in_use_fills_the_specs(tmp_path: Path) -> None:
    (tmp_path / "delta-sync.yaml").write_text("envs:\n  local: {}\n  ci:\n    vars: {suffix: _ci}\n")
    folder = spec(tmp_path)
    project = load_project(tmp_path)

    ci = project.env("ci")
    assert list(load_specs(folder, ci.vars, ci.catalog, ci.name).tables) == [TableName(None, "shop", "orders_ci")]
    local = project.env("local")
    with pytest.raises(SpecError, match=r"undeclared variable `suffix` \(declare it in envs\.local\.vars\)"):
        load_specs(folder, local.vars, local.catalog, local.name)


@given(st.text(alphabet=st.sampled_from("${}ab_1 \\"), max_size=30))
def test_escaped_text_reads_back_as_itself(text: str) -> None:
    assert substitute_vars(escape_vars(text), {"ab": "filled"}) == text


def test_escaped_live_text_loads_as_written(tmp_path: Path) -> None:
    comment = "costs ${price} or $${price}, ${ not a var }"
    escaped = escape_vars({"comment": comment})["comment"]

    (table,) = load_specs(
        spec(tmp_path, f"table: s.t\ncomment: '{escaped}'\ncolumns: [{{name: a, type: int}}]\n")
    ).tables.values()

    assert table.comment == comment

"""The `file:line` of plans, hazards and problems reads the same however the specs were named: relative to
the working directory, absolute only outside it."""

from __future__ import annotations

import io
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from rich.console import Console

from delta_sync.model.errors import SpecError
from delta_sync.model.state import CatalogState
from delta_sync.planning.diff.planner import plan
from delta_sync.render import text as render
from delta_sync.specs.project_file import load_project
from delta_sync.specs.spec_files import load_specs
from delta_sync.specs.yamldoc import shown_path

ORDERS = """\
table: shop.orders
columns:
  - name: id
    type: bigint
checks:
  positive: id > 0
"""
ORDERS_FILE = os.path.join("specs", "shop", "orders.yaml")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "specs" / "shop").mkdir(parents=True)
    (root / "specs" / "shop" / "orders.yaml").write_text(ORDERS)
    return root


def origins(specs: Path) -> set[str]:
    (table,) = load_specs(specs).tables.values()
    found = {table.origin, *(c.origin for c in table.columns), *(c.origin for c in table.checks)}
    return {o.file for o in found if o is not None}


@pytest.mark.parametrize(
    "given",
    [
        pytest.param(lambda root: Path("specs"), id="relative"),
        pytest.param(lambda root: Path("./specs/"), id="dotted"),
        pytest.param(lambda root: root / "specs", id="absolute, as without SPECS"),
        pytest.param(lambda root: root / "specs" / ".." / "specs", id="with-dot-dot"),
        pytest.param(lambda root: Path("specs/shop/orders.yaml"), id="one-file"),
    ],
)
def test_origins_are_relative_to_the_working_directory_however_the_specs_are_named(
    project: Path, monkeypatch: pytest.MonkeyPatch, given: Callable[[Path], Path]
) -> None:
    monkeypatch.chdir(project)

    assert origins(given(project)) == {ORDERS_FILE}


def test_from_a_sub_folder_origins_are_relative_to_it(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(project / "specs")

    assert origins(project / "specs") == {os.path.join("shop", "orders.yaml")}


def test_outside_the_working_directory_origins_are_absolute(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    elsewhere = project.parent / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)

    assert origins(Path("../project/specs")) == {str((project / ORDERS_FILE).resolve())}


def test_a_working_directory_reached_through_a_link_still_gives_relative_origins(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    link = project.parent / "link"
    link.symlink_to(project, target_is_directory=True)
    monkeypatch.chdir(link)

    assert origins(project.resolve() / "specs") == {ORDERS_FILE}
    assert shown_path(link / "specs") == "specs"


def test_the_plan_text_names_the_spec_as_typed_from_here(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(project)
    out = io.StringIO()

    Console(file=out, width=200, no_color=True).print(
        render.render_text(plan(CatalogState(tables={}), load_specs(project / "specs")))
    )

    assert f"+ create table shop.orders  ({ORDERS_FILE})" in out.getvalue()


def test_problems_of_specs_and_of_the_project_file_are_relative_too(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (project / "specs" / "shop" / "orders.yaml").write_text(ORDERS.replace("bigint", "bigitn"))
    (project / "delta-sync.yaml").write_text("envs:\n  local: {}\n  ci:\n    connect: ${env:DS_TEST_UNSET}\n")
    monkeypatch.delenv("DS_TEST_UNSET", raising=False)
    monkeypatch.chdir(project)

    with pytest.raises(SpecError) as spec_error:
        load_specs(project / "specs")
    with pytest.raises(SpecError) as env_error:
        load_project(project).env("ci")
    with pytest.raises(SpecError) as unknown_env:
        load_project(project).env("prod")

    assert [p.file for p in spec_error.value.problems] == [ORDERS_FILE]
    assert [p.file for p in env_error.value.problems] == ["delta-sync.yaml"]
    assert [p.file for p in unknown_env.value.problems] == ["delta-sync.yaml"]

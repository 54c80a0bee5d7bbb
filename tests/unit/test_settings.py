"""The project's settings (delta_sync.specs.settings, read by delta_sync.specs.project_file): an unknown `--env`
reported at the file's `envs:` key, or at no line when the file has none, and an environment's own `ignore:`
patterns added to the project's."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from delta_sync.cli.main import app
from delta_sync.model.errors import SpecError, SpecProblem
from delta_sync.model.state import CatalogState, TableName
from delta_sync.planning.diff.planner import unmanaged_names
from delta_sync.review import doctor, environments
from delta_sync.specs.project_file import load_project

IGNORING = """\
# tables other tools own
ignore: [shop.dbt_*]
envs:
  local: {}
  prod:
    ignore: [shop.tmp_*, shop.dbt_*]
  ci:
    ignore:
      - raw.*
"""


def write(root: Path, project: str | None, **specs: str) -> Path:
    if project is not None:
        (root / "delta-sync.yaml").write_text(textwrap.dedent(project), encoding="utf-8")
    for file, table in specs.items():
        path = root / "specs" / f"{file}.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"table: {table}\ncolumns:\n  - name: id\n    type: bigint\n", encoding="utf-8")
    return root


def unknown_env(root: Path, name: str = "nosuch") -> SpecProblem:
    project = load_project(root)
    with pytest.raises(SpecError) as info:
        project.env(name)
    (problem,) = info.value.problems
    return problem


# --- an unknown environment -------------------------------------------------------------------------------------


def test_an_unknown_environment_is_reported_at_the_envs_key(tmp_path: Path) -> None:
    problem = unknown_env(write(tmp_path, "# the project\nspecs: specs\n\nenvs:\n  local: {}\n  prod: {}\n"), "prd")

    assert (problem.line, problem.message) == (4, "unknown environment `prd`")
    assert problem.hint == "did you mean `prod`? known environments: local, prod"
    assert str(problem) == f"{problem.file}:4: unknown environment `prd` ({problem.hint})"


def test_a_file_without_envs_has_no_line_to_name(tmp_path: Path) -> None:
    problem = unknown_env(write(tmp_path, "specs: specs\ndefault_env: local\n"))

    assert problem.line == 0
    assert problem.hint == "known environments: local; declare others under envs: in delta-sync.yaml"
    assert str(problem) == f"{problem.file}: unknown environment `nosuch` ({problem.hint})"


def test_without_a_file_there_is_no_line_either(tmp_path: Path) -> None:
    problem = unknown_env(write(tmp_path, None))

    assert problem.line == 0
    assert str(problem).startswith(f"{problem.file}: unknown environment `nosuch`")


def test_a_problem_without_a_line_is_shown_without_one() -> None:
    shown = str(SpecProblem("specs", 0, "specs does not exist", "create it"))
    assert shown == "specs: specs does not exist (create it)"
    assert str(SpecProblem("a.yaml", 3, "bad")) == "a.yaml:3: bad"


def test_doctor_names_the_envs_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path, "default_env: local\nenvs:\n  local: {}\n")
    monkeypatch.chdir(tmp_path)

    report = doctor.diagnose("nosuch")
    result = CliRunner().invoke(app, ["doctor", "--env", "nosuch"])

    (check,) = report.checks
    assert "delta-sync.yaml:2: unknown environment `nosuch` (known environments: local)" in check.message
    assert result.exit_code == 1
    assert "delta-sync.yaml:2: unknown environment `nosuch`" in result.stdout
    assert ":0" not in result.stdout


def test_doctor_without_a_project_file_names_no_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)

    result = CliRunner().invoke(app, ["doctor", "--env", "nosuch"])

    assert result.exit_code == 1
    assert "delta-sync.yaml: unknown environment `nosuch`" in result.stdout
    assert "yaml:0" not in result.stdout


# --- ignore: per environment -------------------------------------------------------------------------------------


def test_an_environments_ignore_is_added_to_the_projects(tmp_path: Path) -> None:
    project = load_project(write(tmp_path, IGNORING))

    assert project.ignore == ("shop.dbt_*",)
    assert project.env("local").ignore == ["shop.dbt_*"]
    # The project's first, then the environment's own; a pattern both name is kept once.
    assert project.env("prod").ignore == ["shop.dbt_*", "shop.tmp_*"]
    assert project.env("ci").ignore == ["shop.dbt_*", "raw.*"]


def test_an_environment_may_ignore_tables_when_the_project_ignores_none(tmp_path: Path) -> None:
    project = load_project(write(tmp_path, "envs:\n  local: {}\n  prod: {ignore: ['shop.tmp_*']}\n"))

    assert project.ignore == ()
    assert project.env("local").ignore == []
    assert project.env("prod").ignore == ["shop.tmp_*"]


def test_the_desired_state_of_each_environment_carries_its_patterns(tmp_path: Path) -> None:
    root = write(tmp_path, IGNORING, orders="shop.orders")
    project = load_project(root)
    listed = frozenset(TableName.parse(n) for n in ("shop.orders", "shop.dbt_daily", "shop.tmp_load", "shop.stray"))
    current = CatalogState(tables={}, listed=listed)

    local = environments.load_desired(project, project.env("local"), None)
    prod = environments.load_desired(project, project.env("prod"), None)

    assert local.ignore == ("shop.dbt_*",)
    assert prod.ignore == ("shop.dbt_*", "shop.tmp_*")
    assert [str(n) for n in unmanaged_names(current, local)] == ["shop.stray", "shop.tmp_load"]
    assert [str(n) for n in unmanaged_names(current, prod)] == ["shop.stray"]


def test_a_spec_naming_a_table_one_environment_ignores_is_a_problem_there_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = write(tmp_path, IGNORING, orders="shop.orders", load="shop.tmp_load")
    project = load_project(root)
    monkeypatch.chdir(root)

    assert TableName.parse("shop.tmp_load") in environments.load_desired(project, project.env("local"), None).tables
    with pytest.raises(SpecError) as info:
        environments.load_desired(project, project.env("prod"), None)
    (problem,) = info.value.problems
    assert (Path(problem.file).name, problem.line) == ("load.yaml", 1)
    assert "matches `shop.tmp_*` under ignore: in delta-sync.yaml" in problem.message
    assert CliRunner().invoke(app, ["validate"]).exit_code == 0
    refused = CliRunner().invoke(app, ["validate", "--env", "prod"])
    assert refused.exit_code == 1
    assert "load.yaml:1: table `shop.tmp_load` matches `shop.tmp_*` under ignore:" in refused.output


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        pytest.param("envs:\n  local:\n    ignore: [dbt]\n", 3, "`dbt` is not a pattern of table names", id="no-dot"),
        pytest.param(
            "envs:\n  local:\n    ignore:\n      - shop.ok\n      - a.b.c.d\n",
            5,
            "`a.b.c.d` is not a pattern of table names",
            id="too-many-dots",
        ),
        pytest.param("envs:\n  local:\n    ignore: shop.*\n", 3, "must be a list", id="not-a-list"),
    ],
)
def test_a_bad_pattern_of_an_environment_is_a_problem_at_its_line(
    tmp_path: Path, text: str, line: int, message: str
) -> None:
    write(tmp_path, text)

    with pytest.raises(SpecError) as info:
        load_project(tmp_path)

    (problem,) = info.value.problems
    assert problem.line == line
    assert message in problem.message
    if "pattern" in message:
        assert "e.g. dbt_*.* or raw.events_*" in problem.hint

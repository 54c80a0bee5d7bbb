"""Findings on the pull request's lines (issue 48, point 5): `--format github` as workflow annotations (escaped,
at the repository's path of each spec), and the Markdown comment's links to spec lines."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from typer.testing import CliRunner

from delta_sync.cli import main as cli
from delta_sync.model.state import Origin
from delta_sync.planning.actions import Plan
from delta_sync.planning.diff.planner import plan
from delta_sync.planning.hazard_policy import assess
from delta_sync.planning.hazards import Assessment
from delta_sync.render.annotations import Annotation, command, lines, plan_annotations, repository_path
from delta_sync.render.markdown import render_markdown
from tests.unit.builders import col, state, table

runner = CliRunner()


def test_a_command_escapes_what_would_end_it() -> None:
    found = Annotation("error", "delta-sync: a, b", "50% done\nnext", "specs/a,b.yaml", 3)
    assert command(found) == "::error file=specs/a%2Cb.yaml,line=3,title=delta-sync%3A a%2C b::50%25 done%0Anext"


def test_paths_are_the_repositorys() -> None:
    assert repository_path("specs/x.yaml", "warehouse") == "warehouse/specs/x.yaml"
    assert repository_path("../other/x.yaml", "warehouse") == "other/x.yaml"
    assert repository_path("../../x.yaml", "warehouse") is None
    assert repository_path("/abs/x.yaml") is None
    # Outside the repository: no file, the message alone.
    assert command(Annotation("warning", "t", "m", "/abs/x.yaml", 2)) == "::warning title=t::m"


def blocked_drop() -> tuple[Plan, Assessment]:
    have = dataclasses.replace(
        table("shop.orders", col("id", "bigint"), col("legacy", "string")), num_files=1, size_bytes=10
    )
    want = table("shop.orders", col("id", "bigint", origin=Origin("specs/orders.yaml", 4)))
    want = dataclasses.replace(want, origin=Origin("specs/orders.yaml", 1))
    the_plan = plan(state(have), state(want))
    return the_plan, assess(the_plan, state(have), (), ())


def test_a_blocked_plan_is_one_error_per_block_at_its_line() -> None:
    _plan, assessment = blocked_drop()
    shown = lines(plan_annotations(assessment), "warehouse")
    assert shown.count("::error ") == len(assessment.blocks) > 0
    assert all(line.startswith("::error file=warehouse/specs/orders.yaml,line=") for line in shown.splitlines())
    assert "allow it with --allow" in shown


def test_the_markdown_links_each_blocked_item_to_its_line() -> None:
    the_plan, assessment = blocked_drop()
    source = "https://github.com/o/r/blob/abc123/"
    linked = render_markdown(the_plan, assessment, source=source)
    assert "(https://github.com/o/r/blob/abc123/specs/orders.yaml#L1)" in linked
    assert "Findings at: [`specs/orders.yaml:1`](https://github.com/o/r/blob/abc123/specs/orders.yaml#L1)" in linked
    # Without a source, the comment is as it was.
    assert "https://" not in render_markdown(the_plan, assessment)


def test_lint_prints_annotations(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "delta-sync.yaml").write_text("lint:\n  table-comment: error\n")
    (tmp_path / "specs").mkdir()
    (tmp_path / "specs" / "t.yaml").write_text("table: shop.t\ncolumns:\n  - {name: id, type: bigint}\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GITHUB_WORKSPACE", str(tmp_path.parent))
    result = runner.invoke(cli.app, ["lint", "--format", "github"])
    assert result.exit_code == 3
    where = f"{tmp_path.name}/specs/t.yaml"
    assert result.stdout == (
        f"::error file={where},line=1,title=delta-sync lint%3A table-comment::table `shop.t` has no comment\n"
    )

"""Rules as code (issue 48, point 4), offline: the plan document as typed objects and its JSON Schema in the
repository (checked against real plans), rules over the reviewed plan (an error blocks, a raising rule is one
sentence naming it), and lint's rules over spec files."""

from __future__ import annotations

import dataclasses
import importlib
import json
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from delta_sync.cli import main as cli
from delta_sync.model.errors import DeltaSyncError, SpecError
from delta_sync.model.state import CatalogState
from delta_sync.planfile.schema import SCHEMA_FILE, PlanDocument, plan_json_schema, schema_text
from delta_sync.planning.diff.planner import plan
from delta_sync.planning.hazard_policy import assess
from delta_sync.planning.hazards import Hazard
from delta_sync.render.document import plan_json
from delta_sync.review import environments, pipeline
from delta_sync.review.results import Assessed
from delta_sync.specs.project_file import load_project
from tests.unit.builders import col, state, table

# Untyped: imported as the other schema tests import it.
jsonschema = importlib.import_module("jsonschema")
GOLDEN = Path(__file__).parent / "golden"
runner = CliRunner()

RULES = """\
from delta_sync.specs.custom_rules import RuleFinding


def no_drops(plan):
    for action, hazard in plan.hazards():
        if action.kind == "DropColumns" and hazard.class_ == "destructive":
            names = ", ".join(c["name"] for c in action.columns)
            yield RuleFinding("error", f"no column drops on Fridays ({names})", table=action.table)


def note(plan):
    return [RuleFinding("warning", f"{len(plan.actions)} change(s) to review")]


def broken(plan):
    return 1 / 0


def wrong(plan):
    return ["not a finding"]


def owners(spec):
    if spec.kind == "table" and "owner" not in (spec.data.get("properties") or {}):
        yield RuleFinding("warning", "name the owner", at=("table",))
"""


def test_the_schema_in_the_repository_is_the_models() -> None:
    assert SCHEMA_FILE.read_text() == schema_text(), "run: python -m delta_sync.planfile.schema"


@pytest.mark.parametrize("golden", ["plan.json", "show.json"])
def test_real_plans_hold_to_the_schema(golden: str) -> None:
    document = json.loads((GOLDEN / golden).read_text())
    jsonschema.validate(document, json.loads(SCHEMA_FILE.read_text()))
    typed = PlanDocument.model_validate(document)
    assert [a.kind for a in typed.actions] == [a["kind"] for a in document["actions"]]


def test_the_schema_refuses_what_is_not_a_plan() -> None:
    document = json.loads((GOLDEN / "plan.json").read_text())
    document["actions"][0]["hazards"] = [{"class": "destructive"}]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(document, plan_json_schema())


def desired_with(tmp_path: Path, rules: str) -> CatalogState:
    (tmp_path / "ci").mkdir(exist_ok=True)
    (tmp_path / "ci" / "__init__.py").write_text("")
    (tmp_path / "ci" / "rules.py").write_text(RULES)
    (tmp_path / "delta-sync.yaml").write_text(f"rules: {rules}\n")
    (tmp_path / "specs").mkdir(exist_ok=True)
    (tmp_path / "specs" / "t.yaml").write_text("table: shop.t\ncolumns:\n  - {name: id, type: bigint}\n")
    project = load_project(tmp_path)
    return environments.load_desired(project, project.env(), None)


def judged(tmp_path: Path, rules: str) -> Assessed:
    desired = desired_with(tmp_path, rules)
    have = dataclasses.replace(
        table("shop.t", col("id", "bigint"), col("legacy"), properties={"delta.columnMapping.mode": "name"}),
        num_files=1,
        size_bytes=10,
    )
    current = state(have)
    the_plan = plan(current, desired)
    review = Assessed(the_plan, current, assess(the_plan, current, (), tuple(Hazard), desired=desired))
    return pipeline.judge(review, desired, tmp_path)


@pytest.fixture(autouse=True)
def fresh_modules(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import sys

    monkeypatch.chdir(tmp_path)
    # Each test writes its own ci.rules: none may see another's.
    for name in [m for m in sys.modules if m == "ci" or m.startswith("ci.")]:
        monkeypatch.delitem(sys.modules, name)


def test_an_error_of_a_rule_blocks_and_a_warning_is_shown(tmp_path: Path) -> None:
    review = judged(tmp_path, "[ci.rules:no_drops, ci.rules:note]")
    (block,) = review.assessment.blocks
    assert block.finding.hazard is Hazard.RULE
    assert block.why == "no column drops on Fridays (legacy) (rule ci.rules:no_drops)"
    assert str(block.finding.table) == "shop.t"
    warnings = [f for f in review.assessment.findings if f.hazard is Hazard.RULE and f is not block.finding]
    assert [(w.check, w.reason) for w in warnings] == [("ci.rules:note", "1 change(s) to review")]
    data = plan_json(review.plan, review.assessment)
    ruled = [h for a in data["actions"] for h in a["hazards"] if h["class"] == "rule"]
    assert [(h["rule"], h["blocked"]) for h in ruled] == [("ci.rules:no_drops", True), ("ci.rules:note", False)]
    PlanDocument.model_validate(data)


@pytest.mark.parametrize(
    ("rule", "said"),
    [
        ("ci.rules:broken", "rule ci.rules:broken raised ZeroDivisionError: division by zero"),
        ("ci.rules:wrong", "rule ci.rules:wrong returned str 'not a finding', not a RuleFinding"),
        ("ci.rules:missing", "rule ci.rules:missing: module ci.rules has no function missing"),
        ("ci.nowhere:x", "rule ci.nowhere:x cannot be imported: ModuleNotFoundError: No module named 'ci.nowhere'"),
    ],
)
def test_a_rule_that_fails_is_one_sentence_naming_it(tmp_path: Path, rule: str, said: str) -> None:
    with pytest.raises(DeltaSyncError) as excinfo:
        judged(tmp_path, f"[{rule}]")
    assert str(excinfo.value).startswith(said)
    assert "\n" not in str(excinfo.value)
    assert excinfo.value.exit_code == 1


def test_a_bad_rule_reference_is_a_problem_at_its_line(tmp_path: Path) -> None:
    (tmp_path / "delta-sync.yaml").write_text("lint:\n  rules:\n    - ci.rules\n")
    with pytest.raises(SpecError) as excinfo:
        load_project(tmp_path)
    assert [str(p).split(" (")[0] for p in excinfo.value.problems] == [
        "delta-sync.yaml:3: `ci.rules` is not a rule reference"
    ]


def test_lint_runs_the_teams_rules_over_each_spec(tmp_path: Path) -> None:
    desired_with(tmp_path, "[]")
    (tmp_path / "delta-sync.yaml").write_text(textwrap.dedent("lint:\n  rules: [ci.rules:owners]\n"))
    result = runner.invoke(cli.app, ["lint"])
    assert result.exit_code == 0, result.output
    assert result.stdout == "specs/t.yaml:1: warning ci.rules:owners: name the owner\n"
    (tmp_path / "delta-sync.yaml").write_text(textwrap.dedent("lint:\n  rules: [ci.rules:broken]\n"))
    result = runner.invoke(cli.app, ["lint"])
    assert result.exit_code == 1
    assert "lint rule ci.rules:broken raised ZeroDivisionError: division by zero" in result.output
    assert "Traceback" not in result.output


EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "rules" / "no_big_drops.py"


def test_the_example_rule_blocks_a_big_drop_and_warns_of_a_column_drop(tmp_path: Path) -> None:
    (tmp_path / "rules").mkdir()
    (tmp_path / "rules" / "no_big_drops.py").write_text(EXAMPLE.read_text())
    (tmp_path / "delta-sync.yaml").write_text("rules: [rules.no_big_drops:no_big_drops]\n")
    (tmp_path / "specs").mkdir()
    (tmp_path / "specs" / "gone.yaml").write_text("table: shop.events\ndrop: true\n")
    (tmp_path / "specs" / "t.yaml").write_text("table: shop.t\ncolumns:\n  - {name: id, type: bigint}\n")
    project = load_project(tmp_path)
    desired = environments.load_desired(project, project.env(), None)
    mapped = {"delta.columnMapping.mode": "name"}
    events = dataclasses.replace(table("shop.events", col("id", "bigint")), num_files=900, size_bytes=11 * 2**30)
    t = dataclasses.replace(table("shop.t", col("id", "bigint"), col("legacy"), properties=mapped), num_files=1)
    current = dataclasses.replace(state(events, t), listed=frozenset({events.name, t.name}))
    the_plan = plan(current, desired)
    review = Assessed(the_plan, current, assess(the_plan, current, (), tuple(Hazard), desired=desired))
    judged = pipeline.judge(review, desired, tmp_path)
    assert [b.why for b in judged.assessment.blocks] == [
        "shop.events holds over 10 GiB: archive it first (rule rules.no_big_drops:no_big_drops)"
    ]
    warned = [f.reason for f in judged.assessment.findings if f.hazard is Hazard.RULE]
    assert warned == ["shop.events holds over 10 GiB: archive it first", "shop.t loses legacy: tell its readers"]


def test_the_readmes_rule_is_the_example_rule_run_here() -> None:
    """The lint and policy page shows `examples/rules/no_big_drops.py` (from its first import on); the test above
    runs the file."""
    root = Path(__file__).resolve().parents[2]
    example = (root / "examples" / "rules" / "no_big_drops.py").read_text()
    shown = "from collections.abc import Iterator" + example.split("from collections.abc import Iterator", 1)[1]
    assert shown.strip() in (root / "docs" / "lint-and-policy.md").read_text()

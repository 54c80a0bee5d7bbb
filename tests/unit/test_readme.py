"""The documentation's examples are real (the README and the pages under docs/, read by tests/docs_text.py):
every spec and delta-sync.yaml example loads, in every environment it declares, the README's 30-second example
(which docs/getting-started.md includes) is the spec shipped in specs/, its change example is what the planner
prints, and the keys page's `check` output and the safety page's feature table are what the code says. (The
30-second example's console session is run for real by tests/spark/test_readme_examples.py.)"""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from rich.console import Console

from delta_sync.model.errors import SpecError
from delta_sync.model.state import CatalogState
from delta_sync.planning.diff.planner import plan
from delta_sync.planning.features import FEATURES
from delta_sync.render import text as render
from delta_sync.specs.project_file import load_project
from delta_sync.specs.spec_files import load_specs
from tests import docs_text

REPO = Path(__file__).resolve().parents[2]
DOCS = docs_text.all_text()
YAML_BLOCKS = re.findall(r"```yaml\n(.*?)```", DOCS, re.DOTALL)
BLOCKS = [b for b in YAML_BLOCKS if b.startswith("table:")]
PROJECT_BLOCKS = [b for b in YAML_BLOCKS if b.startswith(("specs:", "default_env:"))]
THIRTY_SECONDS = docs_text.readme_section("example")
ENV_REF = re.compile(r"\$\{env:(\w+)\}")


def test_readme_has_spec_examples() -> None:
    assert len(BLOCKS) >= 2


@pytest.mark.parametrize("block", BLOCKS)
def test_readme_spec_example_validates(block: str, tmp_path: Path) -> None:
    (tmp_path / "example.yaml").write_text(block)
    desired = load_specs(tmp_path)
    assert len(desired.tables) == 1


VIEW_BLOCKS = [b for b in YAML_BLOCKS if b.startswith("view:")]


@pytest.mark.parametrize("block", VIEW_BLOCKS)
def test_readme_view_example_validates(block: str, tmp_path: Path) -> None:
    (tmp_path / "example.yaml").write_text(block)
    desired = load_specs(tmp_path)
    (view,) = desired.views.values()
    assert view.columns is not None


def test_readme_has_a_view_example() -> None:
    assert len(VIEW_BLOCKS) == 1


def test_readme_has_project_file_examples() -> None:
    assert len(PROJECT_BLOCKS) >= 4


@pytest.mark.parametrize("block", PROJECT_BLOCKS)
def test_readme_project_file_example_validates(block: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for variable in ENV_REF.findall(block):
        monkeypatch.setenv(variable, f"value-of-{variable}")
    (tmp_path / "delta-sync.yaml").write_text(block)
    project = load_project(tmp_path)
    assert len(project.envs) >= 2
    for env in project.envs.values():
        assert env.name


def _environments() -> list[Any]:
    return [
        pytest.param(block, name, id=f"example{i + 1}-{name}")
        for i, block in enumerate(PROJECT_BLOCKS)
        for name in yaml.safe_load(block)["envs"]
    ]


@pytest.mark.parametrize(("block", "name"), _environments())
def test_every_environment_of_every_project_example_is_usable_with_only_its_own_variables_set(
    block: str, name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    own = set(ENV_REF.findall(json.dumps(yaml.safe_load(block)["envs"][name])))
    for variable in ENV_REF.findall(block):
        monkeypatch.delenv(variable, raising=False)
    for variable in own:
        monkeypatch.setenv(variable, f"value-of-{variable}")
    (tmp_path / "delta-sync.yaml").write_text(block)
    (tmp_path / "specs").mkdir()
    for i, spec in enumerate(BLOCKS):
        (tmp_path / "specs" / f"example{i}.yaml").write_text(spec)

    env = load_project(tmp_path).env(name)

    assert env.name == name
    desired = load_specs(tmp_path / "specs", env.vars, env.catalog, env.name)
    assert len(desired.tables) == len(BLOCKS)
    assert {table.catalog for table in desired.tables} == {env.catalog}
    for variable in own:
        monkeypatch.delenv(variable)
        with pytest.raises(SpecError, match=f"environment variable {variable} is not set"):
            load_project(tmp_path).env(name)


def test_the_30_second_example_is_the_shipped_spec() -> None:
    (block,) = re.findall(r"`specs/shop/orders\.yaml`:\n\n```yaml\n(.*?)```", THIRTY_SECONDS, re.DOTALL)

    assert block == (REPO / "specs" / "shop" / "orders.yaml").read_text()


def test_the_change_example_is_what_plan_prints_after_those_edits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shown = re.findall(r"```console\n(~ change table.*?)```", THIRTY_SECONDS, re.DOTALL)
    original = (REPO / "specs" / "shop" / "orders.yaml").read_text()
    edited = (
        original.replace("comment: Orders placed in the web shop", "comment: Orders, all channels")
        .replace(
            "total_non_negative: total_amount >= 0", "total_non_negative: total_amount >= 0 AND total_amount < 1e9"
        )
        .replace("checks:", "  - name: currency\n    type: string\nchecks:", 1)
    )
    assert edited.count("\n") == original.count("\n") + 2
    (tmp_path / "applied.yaml").write_text(original)
    (tmp_path / "edited.yaml").write_text(edited)
    monkeypatch.chdir(tmp_path)
    applied = load_specs(tmp_path / "applied.yaml")
    current = CatalogState(applied.tables, frozenset(name.schema_name for name in applied.tables))
    out = io.StringIO()

    Console(file=out, width=200, no_color=True).print(
        render.render_text(plan(current, load_specs(tmp_path / "edited.yaml")))
    )

    assert shown == [out.getvalue()]


def test_the_check_example_is_what_check_prints(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The keys page's `delta-sync check` block, against check's real output over a catalog whose data breaks the
    foreign key as the block says (tests/spark/test_keys.py runs check on real Delta)."""
    from typer.testing import CliRunner

    from delta_sync.cli import main as cli
    from delta_sync.model.catalog import ProbeResult
    from delta_sync.review import environments
    from tests.unit.test_cli import FakeCatalog

    (block,) = [b for b in re.findall(r"```console\n(.*?)```", DOCS, re.DOTALL) if "delta-sync check" in b]
    assert block in docs_text.page("keys.md")
    command, *expected = block.rstrip("\n").splitlines()
    assert command == "$ delta-sync check"
    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / "customers.yaml").write_text(
        "table: shop.customers\ncolumns:\n  - name: id\n    type: bigint\n    nullable: false\nprimary_key: [id]\n"
    )
    (specs / "orders.yaml").write_text(
        "table: shop.orders\ncolumns:\n  - name: customer_id\n    type: bigint\n"
        "foreign_keys:\n  - columns: [customer_id]\n    references: shop.customers(id)\n"
    )
    state = load_specs(specs)

    class Broken(FakeCatalog):
        def probe_keys(self, table: Any, relation: str, keys: Any) -> list[ProbeResult]:
            return [
                ProbeResult(table, k.name, 1, ((("customer_id", "3"), ("rows", "1")),))
                if k.name.startswith("fk_")
                else ProbeResult(table, k.name, 0)
                for k, _parent in keys
            ]

    fake = Broken(state)
    monkeypatch.setattr(environments, "open_catalog", lambda env=None, on_status=None: fake)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "300")
    result = CliRunner().invoke(cli.app, ["check"])
    assert result.exit_code == 3, result.output
    assert result.stdout.rstrip("\n").splitlines() == expected


def test_the_feature_table_is_generated_from_the_features_module() -> None:
    safety = docs_text.page("safety.md")
    start = safety.index("<!-- features table: generated from delta_sync/planning/features.py -->\n")
    end = safety.index("<!-- end of features table -->")
    written = safety[start:end].splitlines()[1:]
    rows = ["| feature | readers must know it | how a plan adds it | added to an existing table | `DROP FEATURE` |"]
    rows.append("|---|---|---|---|---|")
    for feature in FEATURES.values():
        gate = "`irreversible`" if feature.gated else "not gated"
        drop = feature.drop if feature.drop is not None else "cannot (open-source Delta 4.4)"
        reader = "yes" if feature.reader_writer else "no"
        rows.append(f"| `{feature.name}` | {reader} | {feature.added_by} | {gate} | {drop} |")
    assert written == rows

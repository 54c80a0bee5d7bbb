"""The spec examples in the README are real specs: each one validates."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from delta_sync.project import load_project
from delta_sync.spec import load_specs

README = Path(__file__).resolve().parents[2] / "README.md"
BLOCKS = [b for b in re.findall(r"```yaml\n(.*?)```", README.read_text(), re.DOTALL) if b.startswith("table:")]


def test_readme_has_spec_examples() -> None:
    assert len(BLOCKS) >= 2


@pytest.mark.parametrize("block", BLOCKS)
def test_readme_spec_example_validates(block: str, tmp_path: Path) -> None:
    (tmp_path / "example.yaml").write_text(block)
    desired = load_specs(tmp_path)
    assert len(desired.tables) == 1


PROJECT_BLOCKS = [
    b
    for b in re.findall(r"```yaml\n(.*?)```", README.read_text(), re.DOTALL)
    if b.startswith(("specs:", "default_env:"))
]


def test_readme_has_project_file_examples() -> None:
    assert len(PROJECT_BLOCKS) >= 2


@pytest.mark.parametrize("block", PROJECT_BLOCKS)
def test_readme_project_file_example_validates(block: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for variable in re.findall(r"\$\{env:(\w+)\}", block):
        monkeypatch.setenv(variable, f"value-of-{variable}")
    (tmp_path / "delta-sync.yaml").write_text(block)
    project = load_project(tmp_path)
    assert len(project.envs) >= 2
    for env in project.envs.values():
        assert env.name

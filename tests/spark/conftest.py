"""One SparkSession per test process, on a temporary Derby metastore and warehouse."""

from __future__ import annotations

import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from delta_sync.model.state import CatalogState
from delta_sync.planning.actions import Plan
from delta_sync.review import execution, pipeline
from delta_sync.spark.catalog import SparkCatalog
from delta_sync.spark.session import LocalCatalog
from delta_sync.specs.spec_files import load_specs
from tests.spark.cli import PATHS, Cli


@pytest.fixture(scope="session")
def local_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("catalog")


@pytest.fixture(scope="session")
def catalog(local_home: Path) -> SparkCatalog:
    return SparkCatalog(LocalCatalog(local_home, master="local[2]"))


class Project:
    """A folder of specs for one test, with helpers to plan and apply them through the real catalog."""

    def __init__(self, root: Path, catalog: SparkCatalog) -> None:
        self.root = root
        self.catalog = catalog
        self.specs = root / "specs"
        self.specs.mkdir(parents=True, exist_ok=True)

    def write(self, name: str, text: str) -> Path:
        path = self.specs / name
        path.write_text(textwrap.dedent(text))
        return path

    def desired(self) -> CatalogState:
        return load_specs(self.specs)

    def plan(self) -> Plan:
        return pipeline.make_plan(self.catalog, self.desired())

    def apply(self) -> Plan:
        plan = self.plan()
        execution.apply_plan(self.catalog, plan)
        return plan

    def properties(self, table: str) -> dict[str, str]:
        return {str(k): str(v) for k, v in self.sql(f"SHOW TBLPROPERTIES {table}")}

    def sql(self, statement: str) -> list[tuple[object, ...]]:
        return [tuple(r) for r in self.catalog.spark.sql(statement).collect()]


@pytest.fixture
def project(tmp_path: Path, catalog: SparkCatalog) -> Project:
    return Project(tmp_path, catalog)


@pytest.fixture
def schema(request: pytest.FixtureRequest) -> str:
    """A schema name of this test's own, so tests sharing the catalog never collide."""
    return "t_" + "".join(ch if ch.isalnum() else "_" for ch in request.node.name.lower())[:60]


@pytest.fixture(params=PATHS)
def cli_path(request: pytest.FixtureRequest) -> str:
    """The path a command takes (tests/spark/cli.py): a test taking this runs once through the warm engine, as at
    a terminal, and once in-process, as on CI."""
    return str(request.param)


@pytest.fixture
def cli(tmp_path: Path, cli_path: str) -> Iterator[Cli]:
    """A project folder of this test's own, its commands on `cli_path`; its engine stopped at the end."""
    runner = Cli(tmp_path, cli_path)
    yield runner
    runner.close()

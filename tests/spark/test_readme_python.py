"""Every ```python block of docs/python-api.md's "Use from Python", run in order in one namespace (as a notebook
runs its cells), with `spark` bound to the test process's own session, in a project whose specs create a
table with a check: the examples are code that works, not prose."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path
from typing import Any

import pytest

from delta_sync.spark.catalog import SparkCatalog
from tests import docs_text

from .conftest import Project

PAGE = Path(__file__).resolve().parents[2] / "docs" / "python-api.md"


def python_blocks() -> list[str]:
    section = docs_text.section(PAGE.read_text(), "## Use from Python")
    return re.findall(r"```python\n(.*?)```", section, re.S)


def test_the_use_from_python_section_runs(
    catalog: SparkCatalog, project: Project, schema: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocks = python_blocks()
    assert len(blocks) >= 3
    monkeypatch.chdir(project.root)
    project.write(
        "orders.yaml",
        f"table: {schema}.orders\ncolumns:\n  - name: id\n    type: bigint\n    nullable: false\n"
        "  - name: amount\n    type: int\nchecks:\n  positive: amount > 0\n",
    )
    namespace: dict[str, Any] = {"spark": catalog.spark}
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        for block in blocks:
            # The page's table is shop.orders; here it is this test's own.
            exec(compile(block.replace("shop.orders", f"{schema}.orders"), str(PAGE), "exec"), namespace)
    output = printed.getvalue()
    assert f"+ create table {schema}.orders" in output
    assert re.search(r"\d+ statement\(s\), plan [0-9a-f]{16}", output), output
    assert re.search(rf"{schema}.orders \[\d+(, \d+)*\]", output), output  # the versions it made
    assert f"'spark_catalog.{schema}.orders'" in output or f"'{schema}.orders'" in output
    assert (project.root / "plan.json").is_file()
    # The one row the job of the spark_schema example wrote.
    assert catalog.spark.sql(f"SELECT count(*) FROM {schema}.orders").collect()[0][0] == 1

"""The public Python API without a JVM: what it lists, that its reference in docs/python-api.md is its signatures
exactly, that loading specs starts no Spark, and that engine errors come out as DeltaSyncError."""

from __future__ import annotations

import dataclasses
import inspect
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

import delta_sync
from delta_sync.review import environments, library
from delta_sync.specs.settings import Environment

PAGE = Path(__file__).resolve().parents[2] / "docs" / "python-api.md"


def _params(obj: Any) -> str:
    signature = inspect.signature(obj)  # annotations stay as written (postponed evaluation)
    parts: list[str] = []
    keyword_only = False
    for p in signature.parameters.values():
        if p.name == "self":
            continue
        if p.kind is p.KEYWORD_ONLY and not keyword_only:
            parts.append("*")
            keyword_only = True
        text = p.name if p.annotation is p.empty else f"{p.name}: {p.annotation}"
        if p.default is not p.empty:
            text += f" = {p.default!r}"
        parts.append(text)
    returns = "" if signature.return_annotation is signature.empty else f" -> {signature.return_annotation}"
    return f"({', '.join(parts)}){returns}"


def reference() -> list[str]:
    """One line per public function, class, field, property and method: the API as docs/python-api.md lists it."""
    lines: list[str] = []
    for name in delta_sync.__all__:
        obj = getattr(delta_sync, name)
        if name == "__version__":
            lines.append(f"delta_sync.__version__: str = {obj!r}")
        elif inspect.isfunction(obj):
            lines.append(f"delta_sync.{name}{_params(obj)}")
        elif isinstance(obj, type) and issubclass(obj, BaseException):
            code = getattr(obj, "exit_code", None)
            lines.append(f"class delta_sync.{name}({obj.__bases__[0].__name__})  # exit code {code}")
        elif isinstance(obj, type) and issubclass(obj, str):
            lines.append(f"class delta_sync.{name}: {', '.join(repr(m.value) for m in obj)}")  # type: ignore[attr-defined]
        elif isinstance(obj, type):
            lines.append(f"class delta_sync.{name}")
            if dataclasses.is_dataclass(obj):
                for f in dataclasses.fields(obj):
                    if not f.name.startswith("_"):
                        lines.append(f"    .{f.name}: {f.type}")
            for attr, member in sorted(vars(obj).items()):
                if attr.startswith("_"):
                    continue
                if isinstance(member, property):
                    lines.append(f"    .{attr} -> {inspect.signature(member.fget).return_annotation}")  # type: ignore[arg-type]
                elif inspect.isfunction(member):
                    lines.append(f"    .{attr}{_params(member)}")
    return lines


def readme_reference() -> list[str]:
    text = PAGE.read_text()
    section = text.split("### API reference", 1)[1]
    block = re.search(r"```text\n(.*?)```", section, re.S)
    assert block is not None, "docs/python-api.md: no ```text block under ### API reference"
    return block.group(1).rstrip("\n").splitlines()


def test_the_readme_lists_the_public_api_exactly() -> None:
    """Change a public name or signature and this fails until docs/python-api.md's reference says the same."""
    assert readme_reference() == reference(), "\n".join(
        ["docs/python-api.md ### API reference should read:", *reference()]
    )


def test_every_public_name_is_importable_and_documented() -> None:
    for name in delta_sync.__all__:
        obj = getattr(delta_sync, name)
        if name != "__version__":
            assert inspect.getdoc(obj), f"delta_sync.{name} has no docstring"


def test_loading_specs_starts_no_spark(tmp_path: Path) -> None:
    (tmp_path / "specs").mkdir()
    (tmp_path / "specs" / "t.yaml").write_text("table: s.t\ncolumns:\n  - name: id\n    type: bigint\n")
    script = textwrap.dedent(
        """
        import sys
        import delta_sync
        state = delta_sync.load_specs("specs")
        print(sorted(str(n) for n in state.tables))
        loaded = sorted(m for m in sys.modules if m.split(".")[0] in ("pyspark", "py4j", "delta"))
        assert not loaded, loaded
        """
    )
    done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "['spark_catalog.s.t']" or done.stdout.strip() == "['s.t']"


def test_load_specs_reports_every_problem_with_its_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "specs").mkdir()
    (tmp_path / "specs" / "t.yaml").write_text("table: s.t\ncolumns:\n  - name: id\n    type: bigint\n    nul: 1\n")
    with pytest.raises(delta_sync.SpecError) as raised:
        delta_sync.load_specs()
    assert raised.value.exit_code == 1
    assert [(Path(p.file).name, p.line) for p in raised.value.problems] == [("t.yaml", 5)]


class Py4JJavaError(Exception):
    """Stands in for py4j's: only its module matters to the boundary."""


Py4JJavaError.__module__ = "py4j.protocol"


def test_an_engine_error_comes_out_as_a_catalog_error() -> None:
    @library._boundary
    def fails() -> None:
        raise Py4JJavaError("An error occurred while calling o42.sql.\n: java.lang.IllegalStateException: stopped")

    with pytest.raises(delta_sync.CatalogError, match=r"^Spark failed: An error occurred while calling o42\.sql\.$"):
        fails()

    @library._boundary
    def bug() -> None:
        raise KeyError("a bug of ours keeps its traceback")

    with pytest.raises(KeyError):
        bug()


def test_allow_takes_names_and_refuses_the_unallowable() -> None:
    env = Environment(name="local")
    assert environments.allowed_hazards(["destructive,breaking"], env) == {
        delta_sync.Hazard("destructive"),
        delta_sync.Hazard("breaking"),
    }
    assert environments.allowed_hazards("rewrite", env) == {delta_sync.Hazard("rewrite")}
    with pytest.raises(delta_sync.DeltaSyncError, match="cannot be allowed"):
        environments.allowed_hazards(["data-dependent"], env)


def test_bad_arguments_are_one_sentence_before_anything_starts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(delta_sync.DeltaSyncError, match="parallel='2': must be a whole number"):
        delta_sync.apply("specs", parallel="2")  # type: ignore[arg-type]
    with pytest.raises(delta_sync.DeltaSyncError, match="give one or more targets"):
        delta_sync.import_specs([])
    env = Environment(name="local")
    assert environments.allowed_hazards(None, env) == frozenset()

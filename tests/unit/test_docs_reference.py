"""The reference pages cannot drift from the code: every command, option, spec key, project-file key and hazard
class has a description in the code itself, and the pages docs/hooks/reference.py generates cover every one of
them, every exit code the code uses and every public name. The guide's pages keep up too: the safety page's table
names every hazard class, and each error the troubleshooting page quotes is one the code can print."""

from __future__ import annotations

import ast
import functools
import importlib.util
import re
import typing
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import typer.main
from pydantic import BaseModel

import delta_sync
from delta_sync.cli.main import app
from delta_sync.planning.hazards import Hazard
from delta_sync.specs import spec_models
from delta_sync.specs.settings import _ProjectFile
from tests import docs_text

REPO = Path(__file__).resolve().parents[2]


def _hook() -> ModuleType:
    spec = importlib.util.spec_from_file_location("docs_reference_hook", REPO / "docs" / "hooks" / "reference.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


HOOK = _hook()


# --- the code describes everything ---------------------------------------------------------------------------


def _commands() -> Iterator[tuple[str, Any]]:
    """Every command of the typer app, groups included, as click sees it."""

    def walk(command: Any, path: str) -> Iterator[tuple[str, Any]]:
        yield path, command
        for name, sub in sorted(getattr(command, "commands", {}).items()):
            if not sub.hidden:
                yield from walk(sub, f"{path} {name}")

    yield from walk(typer.main.get_command(app), "delta-sync")


COMMANDS = list(_commands())


@pytest.mark.parametrize(("path", "command"), COMMANDS, ids=[path for path, _ in COMMANDS])
def test_every_command_and_option_has_a_description(path: str, command: Any) -> None:
    assert (command.help or "").strip(), f"`{path}` has no help text"
    for param in command.params:
        if getattr(param, "hidden", False):
            continue
        assert (getattr(param, "help", None) or "").strip(), f"`{path}`: {param.name} has no help text"


def _models(roots: tuple[type[BaseModel], ...]) -> list[type[BaseModel]]:
    """The models under `roots`, through their fields' annotations."""
    found: list[type[BaseModel]] = []

    def visit(annotation: Any) -> None:
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            if annotation not in found:
                found.append(annotation)
                for field in annotation.model_fields.values():
                    visit(field.annotation)
            return
        for argument in typing.get_args(annotation):
            visit(argument)

    for root in roots:
        visit(root)
    return found


SPEC_MODELS = _models(
    (spec_models.TableSpec, spec_models.TombstoneSpec, spec_models.ViewSpec, spec_models.ViewTombstoneSpec)
)
PROJECT_MODELS = _models((_ProjectFile,))


def _fields(models: list[type[BaseModel]]) -> list[Any]:
    return [
        pytest.param(model, field.alias or name, field, id=f"{model.__name__}.{name}")
        for model in models
        for name, field in model.model_fields.items()
    ]


@pytest.mark.parametrize(("model", "key", "field"), _fields(SPEC_MODELS + PROJECT_MODELS))
def test_every_key_of_a_spec_and_of_the_project_file_has_a_description(model: type, key: str, field: Any) -> None:
    assert (field.description or "").strip(), f"{model.__name__}.{key} has no description"


def test_the_models_are_all_there() -> None:
    names = {model.__name__ for model in SPEC_MODELS}
    assert {"TableSpec", "ColumnSpec", "IdentitySpec", "PrimaryKeySpec", "ForeignKeySpec", "ViewSpec"} <= names
    assert {"_ProjectFile", "_EnvironmentFile", "SparkSettings", "SubmitSettings", "LintSettings"} <= {
        model.__name__ for model in PROJECT_MODELS
    }


@pytest.mark.parametrize("hazard", list(Hazard), ids=lambda h: h.value)
def test_every_hazard_class_has_a_description(hazard: Hazard) -> None:
    assert HOOK.hazard_docstrings().get(hazard.name, "").strip(), (
        f"Hazard.{hazard.name} has no docstring under it in delta_sync/planning/hazards.py"
    )


# --- the generated pages cover everything ------------------------------------------------------------------


def _section(page: str, heading: str) -> str:
    """The generated page's part under `## heading` (its `{#anchor}` aside), up to the next `## `."""
    match = re.search(rf"^## {re.escape(heading)}(?: \{{#[^}}]*\}})?\n(.*?)(?=^## |\Z)", page, re.M | re.S)
    assert match is not None, f"no section `## {heading}`"
    return match.group(1)


def test_the_command_page_covers_every_command_and_option() -> None:
    page = HOOK.cli_page()
    for path, command in COMMANDS:
        section = _section(page, path)
        for param in command.params:
            if getattr(param, "hidden", False):
                continue
            names = HOOK.option_names(param)
            assert f"`{names}`" in section, f"{path}: {names} is not on the page"
            for name in param.opts:
                assert name in names or param.param_type_name == "argument"
            help_line = " ".join(HOOK.help_text(param.help).split())
            assert HOOK.md_text(help_line)[:40] in section, f"{path}: the help of {names} is not on the page"
        first = HOOK.paragraphs(HOOK.help_text(command.help))[0]
        assert HOOK.md_text(first)[:40] in section, f"{path}: its help is not on the page"
        if path != "delta-sync":
            assert f"[`{path}`](#" in page, f"{path} is not in the page's table of commands"


@pytest.mark.parametrize(
    ("make", "models"),
    [(lambda: HOOK.spec_files_page(), SPEC_MODELS), (lambda: HOOK.project_file_page(), PROJECT_MODELS)],
    ids=["spec-files", "project-file"],
)
def test_the_spec_pages_cover_every_key_with_its_description(make: Any, models: list[type[BaseModel]]) -> None:
    page = make()
    for model in models:
        heading = HOOK.SECTION_NAMES.get(model.__name__, model.__name__)
        section = _section(page, heading)
        for name, field in model.model_fields.items():
            key = field.alias or name
            (row,) = [line for line in section.splitlines() if line.startswith(f"| `{key}` |")]
            assert HOOK.cell(HOOK.md_text(field.description or "")) in row, f"{model.__name__}.{key}"
            default = "required" if field.is_required() else ""
            assert default in row


def test_the_hazard_page_covers_every_class() -> None:
    page = HOOK.hazards_page()
    for hazard in Hazard:
        section = _section(page, hazard.value)
        assert HOOK.md_text(HOOK.paragraphs(HOOK.hazard_docstrings()[hazard.name])[0]) in section
        assert HOOK.hazard_blocks(hazard) in section
        assert f"| [`{hazard.value}`](#{hazard.value}) |" in page


def _exit_codes_in_the_code() -> set[int]:
    """The codes the command line exits with, read from the source: each error class's `exit_code = N`, and each
    literal `typer.Exit(N)` of delta_sync/cli."""
    codes: set[int] = {0}
    for path in (REPO / "delta_sync").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                for statement in node.body:
                    if (
                        isinstance(statement, ast.Assign)
                        and [getattr(target, "id", None) for target in statement.targets] == ["exit_code"]
                        and isinstance(statement.value, ast.Constant)
                        and isinstance(statement.value.value, int)
                    ):
                        codes.add(statement.value.value)
            if (
                path.parent.name == "cli"
                and isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "Exit"
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, int)
            ):
                codes.add(node.args[0].value)
    return codes


def test_the_exit_code_page_covers_every_code_the_code_uses() -> None:
    used = _exit_codes_in_the_code()
    assert {0, 1, 2, 3, 4, 130} <= used
    assert used <= set(HOOK.EXIT_CODES), f"undocumented exit codes: {used - set(HOOK.EXIT_CODES)}"
    page = HOOK.exit_codes_page()
    for code in used:
        assert f"| `{code}` |" in page
    by_command = _section(page, "By command")
    for path, command in COMMANDS:
        if not getattr(command, "commands", None) and path != "delta-sync":
            assert f"[`{path}`](cli.md#" in by_command, f"{path} is not in the exit codes by command"


def test_the_python_page_renders_every_public_name() -> None:
    page = HOOK.python_page()
    for name in delta_sync.__all__:
        if name != "__version__":
            assert f"::: delta_sync.{name}\n" in page, name


def test_the_hook_generates_every_page_the_navigation_lists() -> None:
    navigation = (REPO / "mkdocs.yml").read_text()
    for uri in HOOK.PAGES:
        assert f": {uri}\n" in navigation, f"{uri} is not in mkdocs.yml's nav"
    listed = set(re.findall(r": (reference/[\w-]+\.md)\n", navigation))
    assert listed == set(HOOK.PAGES)


# --- the guide keeps up with the code -------------------------------------------------------------------------


def test_the_safety_page_names_every_hazard_class() -> None:
    section = docs_text.section(docs_text.page("safety.md"), "## Hazards")
    rows = re.findall(r"^\| `([a-z-]+)` \|", section, re.M)
    assert len(rows) == len(set(rows))
    assert set(rows) == {hazard.value for hazard in Hazard}


# Quoted on the troubleshooting page but printed by another program.
NOT_OURS = ("MetaException",)
# What a quoted message's placeholders look like: `<table>`, `...`.
PLACEHOLDER = re.compile(r"<[^<>]*>|\.\.\.")


def _constants(tree: ast.Module) -> dict[str, object]:
    """A module's constants: `NAME = "text"` (or a number) at its top level."""
    found: dict[str, object] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
            for target in node.targets:
                if isinstance(target, ast.Name) and isinstance(node.value.value, str | int | float):
                    found[target.id] = node.value.value
    return found


def _segments(node: ast.JoinedStr, constants: dict[str, object]) -> list[str]:
    """An f-string's literal text, a module constant it formats filled in; split where another value goes."""
    segments, current = [], ""
    for value in node.values:
        if isinstance(value, ast.Constant):
            current += str(value.value)
            continue
        assert isinstance(value, ast.FormattedValue)
        spec = value.format_spec
        spec_text = ""
        if isinstance(spec, ast.JoinedStr):
            spec_text = "".join(str(v.value) for v in spec.values if isinstance(v, ast.Constant))
        name = value.value.id if isinstance(value.value, ast.Name) else None
        if name in constants and value.conversion == -1:
            current += format(constants[name], spec_text)
        else:
            segments.append(current)
            current = ""
    return [*segments, current]


@functools.cache
def _literals() -> tuple[str, ...]:
    """Every string literal of delta_sync in lower case: plain strings, and each f-string's text between the
    values it formats (the module's own constants filled in)."""
    found: list[str] = []
    for path in (REPO / "delta_sync").rglob("*.py"):
        tree = ast.parse(path.read_text())
        constants = _constants(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.JoinedStr):
                found.extend(segment.lower() for segment in _segments(node, constants))
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                found.append(node.value.lower())
    return tuple(found)


def _troubleshooting_messages() -> list[str]:
    page = docs_text.page("troubleshooting.md")
    messages = re.findall(r"```text\n(.*?)```", page, re.S)
    return [line for block in messages for line in block.splitlines() if line.strip()]


# Where the code joins a message's parts: a hint in parentheses, a clause after `;` or `:`, a quoted name.
JOINS = re.compile(r" \(|\) |\)$|; |: |\. |\? | - |-> |`")


@pytest.mark.parametrize("message", _troubleshooting_messages())
def test_each_error_the_troubleshooting_page_quotes_is_one_the_code_prints(message: str) -> None:
    """A quoted message is made of the code's literal words around its values (`<table>`, `...`): each run of two
    words or more between the places where the code joins parts is in one literal of delta_sync."""
    if message.startswith(NOT_OURS):
        return
    pieces = [p.strip(" .,()") for f in PLACEHOLDER.split(message) for p in JOINS.split(f)]
    checked = [p for p in pieces if len(p.split()) >= 2] or [p for p in pieces if p]
    assert checked, f"nothing to check in {message!r}"
    for piece in checked:
        assert any(piece.lower() in literal for literal in _literals()), f"not in the code: {piece!r}"

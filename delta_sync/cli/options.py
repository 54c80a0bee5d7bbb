"""What the commands share on their command lines: the click group that makes a usage error exit 1,
the argument and option types (SPECS, --env, --allow, --no-probes, --rehearse, a table-or-json
--format), and the reading of --env (the project and its environment) and of --allow (hazard classes)."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from delta_sync.cli.console import _guard
from delta_sync.cli.help import polish, quiet
from delta_sync.model.errors import DeltaSyncError

if TYPE_CHECKING:
    from delta_sync.planning.hazards import Hazard
    from delta_sync.specs.settings import Environment, Project


class _Commands(typer.core.TyperGroup):
    """Usage errors (unknown option, bad value, missing argument) exit 1, not click's 2: a CI gate
    reads 2 as "changes pending". Its help reads as a command's does (`help.polish`)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        polish(self)

    def get_params(self, ctx: Any) -> Any:
        params = super().get_params(ctx)
        for param in params:
            quiet(param)
        return params

    def make_context(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return super().make_context(*args, **kwargs)
        except typer._click.exceptions.UsageError as error:
            error.exit_code = 1
            raise

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except typer._click.exceptions.UsageError as error:
            error.exit_code = 1
            raise


SpecsArg = Annotated[
    Path | None,
    typer.Argument(
        metavar="SPECS",
        help="Folder (or file) of table specs (default: the project's, else specs/).",
        show_default=False,
    ),
]
AllowOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--allow",
        metavar="CLASS",
        help=(
            "Hazard classes to let through: destructive, irreversible, breaking, rewrite, compatibility "
            "(comma-separated or repeated)."
        ),
    ),
]
EnvOpt = Annotated[
    str | None,
    typer.Option(
        "--env", "-e", metavar="NAME", help="Environment from delta-sync.yaml (default: its default_env, else local)."
    ),
]
NoProbesOpt = Annotated[
    bool, typer.Option("--no-probes", help="Do not scan table data to check new CHECK / NOT NULL rules.")
]
RehearseOpt = Annotated[
    bool,
    typer.Option(
        "--rehearse",
        help="Run each table's statements on a shallow clone of it first; a statement Delta refuses blocks the plan.",
    ),
]


class SqlFormat(StrEnum):
    table = "table"
    json = "json"


SpecsArgs = Annotated[
    list[Path] | None,
    typer.Argument(
        metavar="SPECS",
        help="Folders or files of table specs (default: the project's, else specs/).",
        show_default=False,
    ),
]


def _env(name: str | None) -> tuple[Project, Environment]:
    """The project around the working directory and its environment `name`, read as
    `review.environments.environment` reads them, without importing the review (`validate` has no use for it)."""
    from delta_sync.spark.engine_identity import project_root
    from delta_sync.specs.project_file import load_project

    def read() -> tuple[Project, Environment]:
        project = load_project(project_root(Path.cwd()))
        return project, project.env(name)

    return _guard(read)


def _allowed(values: list[str] | None) -> frozenset[Hazard]:
    from delta_sync.planning.hazards import ALLOWABLE, Hazard

    names = [v.strip() for value in values or [] for v in value.split(",") if v.strip()]
    allowed = set()
    for name in names:
        try:
            hazard = Hazard(name)
        except ValueError:
            choices = ", ".join(h.value for h in sorted(ALLOWABLE))
            raise DeltaSyncError(f"--allow {name}: not a hazard class; choose from {choices}") from None
        if hazard not in ALLOWABLE:
            raise DeltaSyncError(f"--allow {name}: {name} changes are always checked or blocked and cannot be allowed")
        allowed.add(hazard)
    return frozenset(allowed)


def repository_prefix() -> str:
    """The working directory under the repository's root on GitHub Actions (GITHUB_WORKSPACE), as annotations
    name files from the root; "" elsewhere, or at the root."""
    import os

    workspace = os.environ.get("GITHUB_WORKSPACE")
    if not workspace:
        return ""
    try:
        relative = Path.cwd().resolve().relative_to(Path(workspace).resolve())
    except ValueError:
        return ""
    return "" if str(relative) == "." else relative.as_posix()

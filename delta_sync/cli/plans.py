"""The commands that show a plan: `plan` (review the specs against the catalog, optionally saving
the plan with --out) and `show` (a saved plan, printed as `plan` printed it, with no Spark), and the
printing of a reviewed plan in each --format (its text form is what `apply` shows before confirming)."""

from __future__ import annotations

import json
import os
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.text import Text

from delta_sync.cli import console
from delta_sync.cli.console import _fail, _guard, _with_feedback
from delta_sync.cli.options import AllowOpt, EnvOpt, NoProbesOpt, RehearseOpt, SpecsArg, _allowed, _env
from delta_sync.model.errors import DeltaSyncError

if TYPE_CHECKING:
    from delta_sync.review.results import ReviewedPlan
    from delta_sync.specs.settings import Environment


# The base URL of the reviewed commit's files (e.g. https://github.com/o/r/blob/<sha>/), for Markdown links.
SOURCE_URL_VARIABLE = "DELTA_SYNC_SOURCE_URL"


class PlanFormat(StrEnum):
    text = "text"
    json = "json"
    sql = "sql"
    markdown = "markdown"
    # GitHub workflow annotations: what blocks the plan, at its spec lines (the Action prints them).
    github = "github"


def show(
    plan_file: Annotated[Path, typer.Argument(metavar="PLAN_FILE", help="A plan saved with `plan --out`.")],
    format: Annotated[PlanFormat, typer.Option("--format", "-f", help="Output format.")] = PlanFormat.text,
) -> None:
    """Show a saved plan as `plan` showed it when saving it, with no Spark and no catalog (for CI comments).

    Exit codes:
    0  shown
    3  the plan is blocked
    4  the file was edited since it was made, or the project's specs or settings differ from those it was
       reviewed with
    1  not a readable plan file

    Example:
    $ delta-sync show plan.json --format markdown
    """
    from delta_sync.planfile import document as planfile
    from delta_sync.review import library
    from delta_sync.review.environments import refuse_if_changed_here

    if not plan_file.is_file():
        _fail(DeltaSyncError(f"{plan_file}: no such plan file"))
    shown = _guard(lambda: library.show(plan_file))
    # What apply would refuse is not shown as what it would run.
    _guard(lambda: refuse_if_changed_here(plan_file))
    try:
        note = planfile.check_signature(plan_file, os.environ.get(planfile.KEY_VARIABLE))
    except DeltaSyncError as error:
        note = f"apply would refuse it: {error}"
    console.err.print(Text(f"Plan {shown.id} for environment {shown.environment}: {note}.", style="ds.muted"))
    _print_plan(shown, format)
    if shown.blocked:
        raise typer.Exit(3)


def plan(
    specs: SpecsArg = None,
    format: Annotated[PlanFormat, typer.Option("--format", "-f", help="Output format.")] = PlanFormat.text,
    detailed_exitcode: Annotated[
        bool, typer.Option("--detailed-exitcode", help="Exit 2 when there are changes to apply.")
    ] = False,
    allow: AllowOpt = None,
    no_probes: NoProbesOpt = False,
    out_file: Annotated[
        Path | None,
        typer.Option("--out", metavar="FILE", help="Save the plan to this file, for `delta-sync apply FILE`."),
    ] = None,
    env: EnvOpt = None,
    rehearse: RehearseOpt = False,
) -> None:
    """Show what apply would change, and what it risks.

    Exit codes:
    0  no changes, or only allowed changes
    2  allowed changes pending (with --detailed-exitcode)
    3  something is blocked
    1  an error (a bad spec, no connection)

    Example:
    $ delta-sync plan specs/ --env prod --out plan.json
    """
    from delta_sync.planfile import document as planfile
    from delta_sync.review import library, policy

    if out_file is not None and not out_file.parent.is_dir():
        _fail(DeltaSyncError(f"--out {out_file}: folder {out_file.parent} does not exist; create it first"))
    project, environment = _env(env)
    allowed = _guard(lambda: _allowed(allow))
    result = _with_feedback(
        lambda progress: library.plan(
            specs, env=env, allow=allowed, probes=not no_probes, rehearse=rehearse, progress=progress
        )
    )
    document, plan_id = result.document, result.id
    if out_file is not None:
        try:
            result.save(out_file)
        except DeltaSyncError as error:
            _fail(DeltaSyncError(f"--out {error}"))
        command = f"delta-sync apply {out_file}"
        if environment.name != project.default_env:
            command += f" --env {environment.name}"
        signed = "signed" if "signature" in document else f"unsigned: set {planfile.KEY_VARIABLE} to sign it"
        console.err.print(Text(f"Plan {plan_id} saved to {out_file} ({signed}); run it with: {command}"))
        # What is printed is what the file holds, so that `show` prints it again: no sample rows.
        result = policy.without_samples(result)
    _print_plan(result, format)
    _concurrency_note(environment, result)
    if result.blocked:
        raise typer.Exit(3)
    if detailed_exitcode and not result.is_empty:
        raise typer.Exit(2)


def _concurrency_note(environment: Environment, reviewed: ReviewedPlan) -> None:
    """A plan with statements for tables on S3, where Delta's commits are safe from one Spark driver at a time
    only, says so once on stderr (the sentence is `object_storage.concurrency_note`'s, as doctor's)."""
    if reviewed.is_empty or environment.connect:
        return
    from delta_sync.review.doctor import spark_conf
    from delta_sync.spark.object_storage import concurrency_note

    locations = [t.location for t in reviewed.desired.tables.values() if t.location]
    note = concurrency_note(spark_conf(environment), locations)
    if note is not None:
        console.err.print(Text(f"Note: {note}", style="ds.muted"))


def _print_plan(reviewed: ReviewedPlan, format: PlanFormat) -> None:
    """A plan on stdout as `plan` and `show` print it (text in color at a terminal)."""
    from delta_sync.render.counts import views_of
    from delta_sync.render.markdown import render_markdown

    match format:
        case PlanFormat.json:
            console.out.print_json(json.dumps(reviewed.document))
        case PlanFormat.sql:
            console.out.out(reviewed.render("sql"), end="", highlight=False)
        case PlanFormat.markdown:
            views = views_of(reviewed.plan, reviewed.desired)
            # The Action sets it: the reviewed commit's files, so each finding links to its spec line.
            source = os.environ.get(SOURCE_URL_VARIABLE) or None
            markdown = render_markdown(
                reviewed.plan, reviewed.assessment, views=views, source=source, desired=reviewed.desired
            )
            console.out.out(markdown, end="", highlight=False)
        case PlanFormat.github:
            from delta_sync.cli.options import repository_prefix
            from delta_sync.render.annotations import lines, plan_annotations

            shown = lines(plan_annotations(reviewed.assessment), repository_prefix())
            console.out.out(shown, end="", highlight=False)
        case _:
            _print_text(reviewed)


def _print_text(reviewed: ReviewedPlan) -> None:
    """A plan in text, its tables and views counted apart (`2 table(s) and 1 view match the specs`)."""
    from delta_sync.render import text as render
    from delta_sync.render.counts import views_of

    views = views_of(reviewed.plan, reviewed.desired)
    console.out.print(render.render_text(reviewed.plan, reviewed.assessment, views))

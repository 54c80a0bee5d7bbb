"""The commands that change tables: `apply` (of the specs, of a saved plan file, or through
spark-submit, where the plan is made in a child process and run on the driver) and `rollback` (undo an
applied plan from Delta's history), with the confirmation both ask for before running anything."""

from __future__ import annotations

import json
import sys
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.text import Text

from delta_sync.cli import console
from delta_sync.cli.console import _fail, _Feedback, _guard, _status, _with_feedback
from delta_sync.cli.options import AllowOpt, EnvOpt, NoProbesOpt, RehearseOpt, SpecsArg, _allowed, _env
from delta_sync.cli.plans import _print_text
from delta_sync.model.catalog import APPLY_PARALLEL
from delta_sync.model.errors import DeltaSyncError, UnsafePlanError

if TYPE_CHECKING:
    from delta_sync.planfile.document import SavedPlan
    from delta_sync.planning.hazards import Hazard
    from delta_sync.review.results import ApplyResult, ReviewedPlan
    from delta_sync.specs.settings import Environment, Project


def apply(
    specs: SpecsArg = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Apply without asking.")] = False,
    allow: AllowOpt = None,
    no_probes: NoProbesOpt = False,
    skip_blocked: Annotated[
        bool,
        typer.Option("--skip-blocked", help="Apply the tables that are not blocked; leave the others as they are."),
    ] = False,
    env: EnvOpt = None,
    print_command: Annotated[
        bool,
        typer.Option(
            "--print-command", help="For an environment with submit: settings, print the spark-submit command only."
        ),
    ] = False,
    parallel: Annotated[
        int,
        typer.Option(
            "--parallel",
            metavar="N",
            min=1,
            help="Tables changed at once (each table's statements stay in order; 1: one statement at a time).",
        ),
    ] = APPLY_PARALLEL,
    rehearse: RehearseOpt = False,
) -> None:
    """Apply the specs, or a plan file saved with `plan --out`: check, confirm, run, then check again.

    Exit codes:
    0  applied, or nothing to do
    3  refused, because something is blocked
    4  the saved plan is stale (a table moved since it was made)
    1  an error

    Example:
    $ delta-sync apply plan.json --yes
    """
    from delta_sync.planfile import document as planfile
    from delta_sync.review.environments import allowed_hazards, load_plan

    saved_path = specs if specs is not None and specs.is_file() and planfile.looks_like_plan(specs) else None
    if saved_path is not None:
        saved, note = _guard(lambda: load_plan(saved_path, env))
        project, environment = _env(saved.environment)
        console.err.print(Text(f"Plan {saved.plan_id} for environment {saved.environment}: {note}.", style="ds.muted"))
        allowed = _guard(lambda: allowed_hazards(_allowed(allow), environment))
        if environment.submit is not None:
            if rehearse:
                _fail(DeltaSyncError("--rehearse: a saved plan for spark-submit is rehearsed by plan --rehearse --out"))
            _apply_submitted(project, environment, saved_path, yes, allowed, no_probes, print_command, parallel)
        elif print_command:
            _fail(DeltaSyncError(f"--print-command: environment {environment.name} has no submit: settings"))
        else:
            _apply_saved(saved_path, saved, yes, allowed, parallel, project, rehearse)
        return
    project, environment = _env(env)
    if environment.submit is not None:
        allowed = _guard(lambda: allowed_hazards(_allowed(allow), environment))
        _apply_submitted(project, environment, specs, yes, allowed, no_probes, print_command, parallel, rehearse)
        return
    if print_command:
        _fail(DeltaSyncError(f"--print-command: environment {environment.name} has no submit: settings"))
    _apply_specs(specs, yes, _guard(lambda: _allowed(allow)), no_probes, skip_blocked, env, parallel, rehearse)


def _apply_specs(
    specs: Path | None,
    yes: bool,
    allowed: frozenset[Hazard],
    no_probes: bool,
    skip_blocked: bool,
    env: str | None,
    parallel: int,
    rehearse: bool = False,
) -> None:
    from delta_sync.render.counts import objects_match
    from delta_sync.review import library
    from delta_sync.review.policy import without_blocked
    from delta_sync.review.results import BlockedPlanError

    reviewed: list[ReviewedPlan] = []

    def show(feedback: _Feedback, found: ReviewedPlan) -> bool:
        reviewed.append(found)
        feedback.pause()
        _print_text(found)
        runnable = found.plan
        if found.blocked:
            runnable = without_blocked(found)
            skipped = ", ".join(str(t) for t in sorted(found.assessment.blocked_tables))
            console.err.print(Text(f"--skip-blocked: leaving {skipped} as they are.", style="ds.change"))
        if not runnable.is_empty:
            _confirm(yes)
        return True

    def run(feedback: _Feedback) -> ApplyResult:
        try:
            # --skip-blocked must know up front which tables the data blocks: the library then probes every rule.
            return library.apply(
                specs,
                env=env,
                allow=allowed,
                probes=not no_probes,
                parallel=parallel,
                skip_blocked=skip_blocked,
                rehearse=rehearse,
                confirm=lambda found: show(feedback, found),
                progress=feedback,
            )
        except BlockedPlanError as blocked:
            feedback.pause()
            _print_text(blocked.plan)
            console.err.print("[ds.blocked]Nothing applied: resolve or allow the blocked items above first.[/]")
            raise typer.Exit(3) from None

    result = _with_feedback(run)
    if result.applied and result.changed_by_others:
        console.err.print(
            Text(f"Applied {result.applied} statement(s) (plan {result.plan_id}), but:", style="ds.change")
        )
        for sentence in result.changed_by_others:
            console.err.print(Text(f"  {sentence}.", style="ds.change"))
    elif result.applied:
        desired, skipped = reviewed[0].desired, set(result.skipped)
        tables, views = len(desired.tables.keys() - skipped), len(desired.views.keys() - skipped)
        console.err.print(
            f"[ds.ok]Applied {result.applied} statement{'s' if result.applied != 1 else ''} (plan {result.plan_id}); "
            f"{'all ' if not result.skipped else ''}{objects_match(tables, views, 'the specs')}.[/]"
        )
    if result.exit_code:
        raise typer.Exit(result.exit_code)


def _confirm(yes: bool) -> None:
    if yes:
        return
    if not sys.stdin.isatty():
        console.err.print("[ds.blocked]Refusing to apply without confirmation: pass --yes.[/]")
        raise typer.Exit(1)
    if not typer.confirm("Apply these changes?", default=False):
        console.err.print("Cancelled; nothing applied.")
        raise typer.Exit(1)


def _apply_saved(
    path: Path,
    saved: SavedPlan,
    yes: bool,
    allowed: frozenset[Hazard],
    parallel: int,
    project: Project,
    rehearse: bool = False,
) -> None:
    from delta_sync.planfile import document as planfile
    from delta_sync.render.counts import objects_of, views_changed, views_of
    from delta_sync.review import library
    from delta_sync.review.environments import refuse_if_changed
    from delta_sync.review.results import BlockedPlanError

    _guard(lambda: refuse_if_changed(saved, project))
    if saved.blocked:
        _fail(UnsafePlanError(f"plan {saved.plan_id} has blocked changes; make a new plan once they are resolved"))
    if not saved.statements:
        console.err.print(Text(f"Plan {saved.plan_id}: nothing to apply.", style="ds.ok"))
        return
    if not yes and not sys.stdin.isatty():
        _confirm(yes)  # refuses before Spark starts
    tables: list[int] = []

    def show(feedback: _Feedback, found: ReviewedPlan) -> bool:
        if found.id != saved.plan_id:  # the file was replaced since it was read: confirm what runs
            raise planfile.RefusedPlanError(f"{path} changed while it was being applied; nothing was applied")
        feedback.pause()
        _print_text(found)
        # A saved plan's apply re-reads and confirms its tables, not its views.
        tables.append(len(set(found.tables) - views_of(found.plan, found.desired)))
        on = objects_of([s.table for s in saved.statements], views_changed(found.plan.actions))
        console.err.print(Text(f"Plan {saved.plan_id}: {len(saved.statements)} statement(s) on {on}:"))
        for statement in saved.statements:
            console.err.print(Text(f"  {statement.sql.splitlines()[0]}", style="ds.muted"))
        _confirm(yes)
        return True

    def run(feedback: _Feedback) -> ApplyResult:
        try:
            return library.apply(
                path,
                allow=allowed,
                parallel=parallel,
                rehearse=rehearse,
                confirm=lambda found: show(feedback, found),
                progress=feedback,
            )
        except BlockedPlanError as blocked:
            feedback.pause()
            _print_text(blocked.plan)
            raise

    result = _with_feedback(run)
    if result.changed_by_others:
        console.err.print(Text(f"Applied plan {saved.plan_id}: {result.applied} statement(s), but:", style="ds.change"))
        for sentence in result.changed_by_others:
            console.err.print(Text(f"  {sentence}.", style="ds.change"))
        return
    console.err.print(
        Text(
            f"Applied plan {saved.plan_id}: {result.applied} statement(s); "
            f"re-read: {tables[0]} table(s) match the plan.",
            style="ds.ok",
        )
    )


def _apply_submitted(
    project: Project,
    env: Environment,
    specs: Path | None,
    yes: bool,
    allowed: frozenset[Hazard],
    no_probes: bool,
    print_command: bool,
    parallel: int,
    rehearse: bool = False,
) -> None:
    """apply through spark-submit: plan here (or take a saved plan), run the statements on the driver.
    `rehearse`: the plan made here is rehearsed here (client mode, the job's catalog) before submitting."""
    import shlex

    from delta_sync.planfile import document as planfile
    from delta_sync.render.counts import objects_of, views_changed
    from delta_sync.review.environments import env_home, refuse_if_changed
    from delta_sync.spark.submit import (
        catalog_refused,
        give_catalog_to_driver,
        package_zip,
        run_submit,
        secret_conf,
        submit_command,
        submit_jars,
    )

    assert env.submit is not None
    home = env_home(project, env)
    if specs is not None and specs.is_file() and planfile.looks_like_plan(specs):
        plan_path = specs
    else:
        plan_path = _plan_in_child(specs, env, sorted(h.value for h in allowed), no_probes, home / "submit", rehearse)
    saved = _guard(lambda: planfile.load(plan_path))
    _guard(lambda: refuse_if_changed(saved, project))
    with _status("Preparing spark-submit...") as on_status:
        settings = env.submit
        jars = _guard(lambda: submit_jars(settings, on_status))
        # Secrets go to the job in a private file, not on its command line; a printed command shows them masked.
        apart = None if print_command else secret_conf(settings, project.redact)
        command = submit_command(
            env.submit,
            plan_path,
            home,
            jars,
            package_zip(home / "submit"),
            parallel,
            sorted(h.value for h in allowed),
            apart,
            env.statement_timeout,
        )
    if print_command:
        with _status("Preparing spark-submit...") as on_status:
            stopped = give_catalog_to_driver(env.submit, home, on_status)
        if stopped:
            console.err.print(
                Text("Stopped the delta-sync engine: the command's driver takes the local catalog.", style="ds.muted")
            )
        console.out.out(project.redact(shlex.join(command)), highlight=False)
        return
    if saved.blocked:
        _fail(UnsafePlanError(f"plan {saved.plan_id} has blocked changes; make a new plan once they are resolved"))
    if not saved.statements:
        console.err.print(Text("Nothing to apply.", style="ds.ok"))
        return
    from delta_sync.planfile import codec as plancodec

    typed = _guard(lambda: [plancodec.decode_action(a) for a in saved.typed_actions])
    on = objects_of([s.table for s in saved.statements], views_changed(typed))
    console.err.print(
        Text(
            f"Plan {saved.plan_id}: {len(saved.statements)} statement(s) on {on}, "
            f"through spark-submit --master {env.submit.master}."
        )
    )
    _confirm(yes)
    with _status("Preparing spark-submit...") as on_status:
        give_catalog_to_driver(env.submit, home, on_status)
    log = home / "logs" / "submit.log"
    with console.err.status("spark-submit: starting the driver..."):
        outcome = run_submit(
            command, log, lambda line: console.err.print(Text(project.redact(line))), project.redact, apart
        )
    result = outcome.result
    if result is None:
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-15:])
        console.err.print(Text(project.redact(tail), style="ds.muted"))
        _fail(DeltaSyncError(f"spark-submit exited {outcome.exit_code} before running the plan; its log: {log}"))
    if result["status"] != "applied":
        message = Text("Error: ", style="ds.blocked")
        message.append(project.redact(catalog_refused(env.submit, home, log) or str(result["error"])))
        console.err.print(message)
        raise typer.Exit(outcome.exit_code or 1)
    console.err.print(
        Text(f"Applied plan {saved.plan_id}: {result['applied']} statement(s) through spark-submit.", style="ds.ok")
    )


def _plan_in_child(
    specs: Path | None, env: Environment, allow: list[str], no_probes: bool, folder: Path, rehearse: bool = False
) -> Path:
    """`plan --out` in a child process: its Spark (and the embedded metastore's lock) is gone when
    spark-submit's driver starts."""
    import subprocess

    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "plan.json"
    path.unlink(missing_ok=True)
    command = [sys.executable, "-m", "delta_sync", "plan", *([str(specs)] if specs else []), "--env", env.name]
    command += ["--out", str(path), *(f"--allow={a}" for a in allow), *(["--no-probes"] if no_probes else [])]
    command += ["--rehearse"] if rehearse else []
    done = subprocess.run(command, check=False)
    if done.returncode != 0:
        raise typer.Exit(done.returncode)
    return path


class RollbackFormat(StrEnum):
    text = "text"
    json = "json"


def rollback(
    plan_ref: Annotated[
        str,
        typer.Argument(
            metavar="PLAN",
            help="The plan to undo: its id (apply prints it) or its saved plan file.",
        ),
    ],
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Roll back without asking.")] = False,
    format: Annotated[RollbackFormat, typer.Option("--format", "-f", help="Output format.")] = RollbackFormat.text,
    allow: AllowOpt = None,
    out_file: Annotated[
        Path | None,
        typer.Option(
            "--out", metavar="FILE", help="Save the rollback plan (for `delta-sync apply FILE`) instead of running it."
        ),
    ] = None,
    env: EnvOpt = None,
) -> None:
    """Undo an applied plan from Delta's history.

    Each table is restored where nobody wrote it since the plan (RESTORE); where someone did, the reverse change is
    planned forward and their rows are kept; a table the plan created is dropped.

    Exit codes:
    0  rolled back, or nothing to roll back
    3  something is blocked (nothing ran)
    4  a table moved while the rollback was reviewed
    1  an error (for example, no commit of that plan)

    Example:
    $ delta-sync rollback 3f2a9c41d0b87e65 --env prod
    """
    from delta_sync.planfile import document as planfile
    from delta_sync.render import text as render
    from delta_sync.review import library
    from delta_sync.review.environments import env_home, load_plan

    if out_file is not None and not out_file.parent.is_dir():
        _fail(DeltaSyncError(f"--out {out_file}: folder {out_file.parent} does not exist; create it first"))
    allowed = _guard(lambda: _allowed(allow))
    path = Path(plan_ref)
    saved_env = None
    if path.is_file() and planfile.looks_like_plan(path):
        saved_env = _guard(lambda: load_plan(path, env))[0].environment
    project, environment = _env(saved_env or env)
    allowed |= frozenset(environment.allow)
    if environment.submit is not None and out_file is None:
        # Reviewed here by a child (its Spark and the metastore's lock gone), run by spark-submit's driver.
        folder = env_home(project, environment) / "submit"
        made = _rollback_in_child(plan_ref, environment, sorted(h.value for h in allowed), folder)
        _apply_submitted(project, environment, made, yes, allowed, False, False, APPLY_PARALLEL)
        return
    reviewed = _with_feedback(
        lambda progress: library.plan_rollback(plan_ref, env=environment.name, allow=allowed, progress=progress)
    )
    undoes = str(reviewed.document["rolls_back"])
    if format is RollbackFormat.json:
        console.out.print_json(json.dumps(reviewed.document))
    else:
        console.out.print(render.render_text(reviewed.plan, reviewed.assessment))
        for entry in reviewed.document["rollback"]["nothing_to_undo"]:
            console.out.print(Text(f"{entry['table']}: nothing to undo: {entry['why']}", style="ds.muted"))
    if out_file is not None:
        try:
            reviewed.save(out_file)
        except DeltaSyncError as error:
            _fail(DeltaSyncError(f"--out {error}"))
        console.err.print(
            Text(
                f"Rollback plan {reviewed.id} (undoes plan {undoes}) saved to {out_file}; run it with: "
                f"delta-sync apply {out_file}"
            )
        )
        raise typer.Exit(3 if reviewed.blocked else 0)
    if reviewed.blocked:
        console.err.print("[ds.blocked]Nothing rolled back: resolve or allow the blocked items above first.[/]")
        raise typer.Exit(3)
    if reviewed.is_empty:
        console.err.print(Text(f"Nothing to roll back: plan {undoes} has nothing left to undo.", style="ds.ok"))
        return
    _confirm(yes)
    result = _with_feedback(
        lambda progress: library.rollback(reviewed, env=environment.name, allow=allowed, progress=progress)
    )
    console.err.print(
        Text(
            f"Rolled back plan {undoes}: {result.applied} statement(s) (rollback {result.plan_id}). The specs "
            "no longer match these tables: `delta-sync plan` shows the change again; revert the specs in "
            "version control, or apply again.",
            style="ds.ok",
        )
    )


def _rollback_in_child(plan_ref: str, env: Environment, allow: list[str], folder: Path) -> Path:
    """`rollback --out` in a child process, as `_plan_in_child` does for a plan."""
    import subprocess

    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "rollback.json"
    path.unlink(missing_ok=True)
    command = [sys.executable, "-m", "delta_sync", "rollback", plan_ref, "--env", env.name, "--out", str(path)]
    command += [f"--allow={a}" for a in allow]
    done = subprocess.run(command, check=False)
    if done.returncode != 0:
        raise typer.Exit(done.returncode)
    return path

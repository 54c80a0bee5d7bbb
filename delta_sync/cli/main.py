"""The command line: parse -> api -> render -> exit code. Results on stdout, everything else on stderr."""

from __future__ import annotations

import dataclasses
import json
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from enum import StrEnum
from functools import partial
from pathlib import Path
from typing import Annotated, Any, NoReturn, TypeVar

import typer
from rich.console import Console
from rich.status import Status
from rich.table import Table as RichTable
from rich.text import Text

from delta_sync.model.errors import DeltaSyncError, SpecError, SpecProblem, UnsafePlanError
from delta_sync.model.state import CatalogState, ForeignKey, PrimaryKey
from delta_sync.planfile import document as planfile
from delta_sync.planning.hazards import ALLOWABLE, Hazard
from delta_sync.render import text as render
from delta_sync.render.counts import objects_match, objects_of, views_changed, views_of
from delta_sync.render.document import plan_json
from delta_sync.render.markdown import render_markdown
from delta_sync.review import api, library, policy
from delta_sync.review.library import BlockedPlanError, Progress, ReviewedPlan
from delta_sync.specs.project import Environment, Project
from delta_sync.sql import literals
from delta_sync.version import __version__


class _Commands(typer.core.TyperGroup):
    """Usage errors (unknown option, bad value, missing argument) exit 1, not click's 2: a CI gate
    reads 2 as "changes pending"."""

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


app = typer.Typer(
    cls=_Commands,
    help="Declarative, safe schema migrations for Delta Lake tables.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
out = Console(theme=render.THEME, highlight=False, soft_wrap=True)
err = Console(theme=render.THEME, stderr=True, highlight=False, soft_wrap=True)


def fresh_consoles() -> None:
    """Consoles that look at this process's terminal and environment now (colours, width): a command forked
    by the warm engine's preloaded process inherits consoles made for that process."""
    global out, err
    out = Console(theme=render.THEME, highlight=False, soft_wrap=True)
    err = Console(theme=render.THEME, stderr=True, highlight=False, soft_wrap=True)


T = TypeVar("T")

SpecsArg = Annotated[
    Path | None,
    typer.Argument(help="Folder (or file) of table specs [default: the project's, else specs/].", show_default=False),
]
AllowOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--allow",
        help=(
            "Hazard classes to let through: destructive, irreversible, breaking, rewrite, compatibility "
            "(comma-separated or repeated)."
        ),
    ),
]
EnvOpt = Annotated[
    str | None,
    typer.Option("--env", "-e", help="Environment from delta-sync.yaml (default: its default_env, else local)."),
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


class PlanFormat(StrEnum):
    text = "text"
    json = "json"
    sql = "sql"
    markdown = "markdown"


class SqlFormat(StrEnum):
    table = "table"
    json = "json"


def _fail(error: DeltaSyncError) -> NoReturn:
    # Engine messages contain `[ERROR_CLASS]`: print them as text, never as rich markup.
    message = Text()
    if not isinstance(error, SpecError):
        message.append("Error: ", style="ds.blocked")
    message.append(str(error))
    err.print(message)
    raise typer.Exit(error.exit_code)


def _guard(fn: Callable[[], T]) -> T:
    try:
        return fn()
    except DeltaSyncError as error:
        _fail(error)
    except KeyboardInterrupt:
        err.print("[ds.blocked]Interrupted.[/]")
        raise typer.Exit(130) from None


@contextmanager
def _status(message: str) -> Iterator[Callable[[str], None]]:
    """A spinner at a terminal; elsewhere (a CI log) one timestamped line per phase, so the log is
    never silent while Spark starts or data is checked."""
    if not err.is_terminal:
        started = time.monotonic()

        def line(text: str) -> None:
            err.print(Text(f"[{time.monotonic() - started:5.1f}s] {text}", style="ds.muted"))

        line(message)
        yield line
        return
    with err.status(message) as status:
        yield lambda text: status.update(text)


class _Feedback:
    """The progress of one library call: a spinner at a terminal (in a CI log, one timestamped line per
    phase instead, so the log is never silent), and a line per statement as it finishes."""

    def __init__(self) -> None:
        self._started = time.monotonic()
        self._status: Status | None = None
        self._lock = threading.Lock()  # apply's worker threads report at once

    def __call__(self, event: Progress) -> None:
        if event.step is None:
            self.phase(event.message)
        elif event.done:
            line = Text("✓ ", style="ds.ok")
            line.append(event.message)
            if event.seconds is not None:
                line.append(f" ({event.seconds:.1f}s)", style="ds.muted")
            err.print(line)
        elif err.is_terminal:
            self.phase(event.message)

    def phase(self, message: str) -> None:
        with self._lock:
            self._phase(message)

    def _phase(self, message: str) -> None:
        if not err.is_terminal:
            err.print(Text(f"[{time.monotonic() - self._started:5.1f}s] {message}", style="ds.muted"))
        elif self._status is None:
            self._status = err.status(message)
            self._status.start()
        else:
            self._status.update(message)

    def pause(self) -> None:
        """Before printing a plan or asking a question: the spinner goes, the next phase brings it back."""
        with self._lock:
            if self._status is not None:
                self._status.stop()
                self._status = None


def _with_feedback(work: Callable[[_Feedback], T]) -> T:
    feedback = _Feedback()
    try:
        return _guard(lambda: work(feedback))
    finally:
        feedback.pause()


def _env(name: str | None) -> tuple[Project, Environment]:
    return _guard(lambda: api.environment(name))


def _load(specs: Path | None, env: Environment, project: Project) -> CatalogState:
    from delta_sync.specs.spec import load_specs

    return load_specs(specs or project.specs, env.vars, env.catalog, env.name)


def _allowed(values: list[str] | None) -> frozenset[Hazard]:
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


SpecsArgs = Annotated[
    list[Path] | None,
    typer.Argument(help="Folders or files of table specs [default: the project's, else specs/].", show_default=False),
]


@app.command()
def validate(specs: SpecsArgs = None, env: EnvOpt = None) -> None:
    """Check spec files offline (no Spark): every problem with file and line. Several paths (a pre-commit
    hook's changed files) are checked each on its own, and every problem of all of them is shown."""
    project, environment = _env(env)
    problems: list[SpecProblem] = []
    count = views = tombstones = 0
    paths: list[Path | None] = list(specs) if specs else [None]
    for path in paths:
        try:
            loaded = _load(path, environment, project)
            count += len(loaded.tables)
            views += len(loaded.views)
            tombstones += len(loaded.dropped)
        except SpecError as error:
            problems.extend(error.problems)
        except DeltaSyncError as error:
            _fail(error)
    if problems:
        _fail(SpecError(problems))
    found = [f"{count} table spec{'s' if count != 1 else ''}"]
    found += [f"{views} view spec{'s' if views != 1 else ''}"] if views else []
    found += [f"{tombstones} tombstone{'s' if tombstones != 1 else ''}"] if tombstones else []
    err.print(f"[ds.ok]{', '.join(found)} valid.[/]")


@app.command()
def fmt(
    specs: SpecsArgs = None,
    check: Annotated[
        bool, typer.Option("--check", help="Change nothing; list the files that would change and exit 1 if any.")
    ] = False,
    env: EnvOpt = None,
) -> None:
    """Rewrite spec files in one canonical layout (key order, type spelling), keeping their comments.

    Exit 0: nothing to change (or files rewritten); 1: --check found files to rewrite, or an error.
    """
    from delta_sync.specs import fmt as formatter
    from delta_sync.specs.spec import spec_paths

    project, _environment = _env(env)
    files = [f for path in specs or [project.specs] for f in (spec_paths(path) if path.is_dir() else [path])]
    changed = []
    for file in files:
        if not file.is_file():
            _fail(DeltaSyncError(f"{file}: no such spec file or folder"))
        if _guard(partial(formatter.needs_format if check else formatter.format_file, file)):
            changed.append(file)
    for file in changed:
        shown = os.path.relpath(file) if file.resolve().is_relative_to(Path.cwd().resolve()) else str(file)
        out.print(Text(f"{'would reformat' if check else 'reformatted'} {shown}"))
    unchanged = len(files) - len(changed)
    err.print(Text(f"{len(changed)} file(s) {'to reformat' if check else 'reformatted'}, {unchanged} unchanged."))
    if check and changed:
        raise typer.Exit(1)


@app.command()
def show(
    plan_file: Annotated[Path, typer.Argument(metavar="PLAN_FILE", help="A plan saved with `plan --out`.")],
    format: Annotated[PlanFormat, typer.Option("--format", "-f", help="Output format.")] = PlanFormat.text,
) -> None:
    """Show a saved plan as `plan` showed it when saving it: no Spark, no catalog (for CI comments).

    Exit 0: shown; 3: the plan is blocked; 1: not a readable plan file.
    """
    if not plan_file.is_file():
        _fail(DeltaSyncError(f"{plan_file}: no such plan file"))
    shown = _guard(lambda: library.show(plan_file))
    try:
        note = planfile.check_signature(plan_file, os.environ.get(planfile.KEY_VARIABLE))
    except DeltaSyncError as error:
        note = f"apply would refuse it: {error}"
    err.print(Text(f"Plan {shown.id} for environment {shown.environment}: {note}.", style="ds.muted"))
    _print_plan(shown, format)
    if shown.blocked:
        raise typer.Exit(3)


@app.command()
def schema(
    plan_file: Annotated[bool, typer.Option("--plan", help="The schema of a saved plan file instead.")] = False,
) -> None:
    """Print the JSON Schema of a spec file (for editors), or of a saved plan file."""
    if plan_file:
        out.print_json(json.dumps(planfile.SavedPlan.model_json_schema()))
        return
    from delta_sync.specs.spec import spec_json_schema

    out.print_json(json.dumps(spec_json_schema()))


@app.command()
def plan(
    specs: SpecsArg = None,
    format: Annotated[PlanFormat, typer.Option("--format", "-f", help="Output format.")] = PlanFormat.text,
    detailed_exitcode: Annotated[
        bool, typer.Option("--detailed-exitcode", help="Exit 2 when there are changes to apply.")
    ] = False,
    allow: AllowOpt = None,
    no_probes: NoProbesOpt = False,
    out_file: Annotated[
        Path | None, typer.Option("--out", help="Save the plan to this file, for `delta-sync apply FILE`.")
    ] = None,
    env: EnvOpt = None,
    rehearse: RehearseOpt = False,
) -> None:
    """Show what apply would change, and what it risks.

    Exit 0: no changes, or only allowed changes; 2: allowed changes pending (with --detailed-exitcode);
    3: something is blocked; 1: error (bad spec, no connection).
    """
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
        err.print(Text(f"Plan {plan_id} saved to {out_file} ({signed}); run it with: {command}"))
        # What is printed is what the file holds, so that `show` prints it again: no sample rows.
        result = dataclasses.replace(result, review=policy.without_samples(result.review))
    _print_plan(result, format)
    if result.blocked:
        raise typer.Exit(3)
    if detailed_exitcode and not result.is_empty:
        raise typer.Exit(2)


def _print_plan(reviewed: ReviewedPlan, format: PlanFormat) -> None:
    """A plan on stdout as `plan` and `show` print it (text in color at a terminal)."""
    match format:
        case PlanFormat.json:
            out.print_json(json.dumps(reviewed.document))
        case PlanFormat.sql:
            out.out(reviewed.render("sql"), end="", highlight=False)
        case PlanFormat.markdown:
            views = views_of(reviewed.review.plan, reviewed.desired)
            markdown = render_markdown(reviewed.review.plan, reviewed.review.assessment, views=views)
            out.out(markdown, end="", highlight=False)
        case _:
            _print_text(reviewed)


def _print_text(reviewed: ReviewedPlan) -> None:
    """A plan in text, its tables and views counted apart (`2 table(s) and 1 view match the specs`)."""
    views = views_of(reviewed.review.plan, reviewed.desired)
    out.print(render.render_text(reviewed.review.plan, reviewed.review.assessment, views))


@app.command()
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
        bool, typer.Option("--print-command", help="For a submit: environment, print the spark-submit command only.")
    ] = False,
    parallel: Annotated[
        int,
        typer.Option(
            "--parallel",
            min=1,
            help="Tables changed at once (each table's statements stay in order; 1: one statement at a time).",
        ),
    ] = api.APPLY_PARALLEL,
    rehearse: RehearseOpt = False,
) -> None:
    """Apply the specs (or a plan file saved with `plan --out`): check, confirm, run, confirm.

    Exit 0: applied, or nothing to do; 3: refused because something is blocked;
    4: the saved plan is stale (a table moved since it was made); 1: error.
    """
    saved_path = specs if specs is not None and specs.is_file() and planfile.looks_like_plan(specs) else None
    if saved_path is not None:
        saved, note = _guard(lambda: library.load_plan(saved_path, env))
        project, environment = _env(saved.environment)
        err.print(Text(f"Plan {saved.plan_id} for environment {saved.environment}: {note}.", style="ds.muted"))
        allowed = _guard(lambda: _allowed(allow)) | frozenset(environment.allow)
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
        allowed = _guard(lambda: _allowed(allow)) | frozenset(environment.allow)
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
    reviewed: list[ReviewedPlan] = []

    def show(feedback: _Feedback, found: ReviewedPlan) -> bool:
        reviewed.append(found)
        feedback.pause()
        _print_text(found)
        runnable = found.review.plan
        if found.blocked:
            runnable = api.without_blocked(found.review)
            skipped = ", ".join(str(t) for t in sorted(found.review.assessment.blocked_tables))
            err.print(Text(f"--skip-blocked: leaving {skipped} as they are.", style="ds.change"))
        if not runnable.is_empty:
            _confirm(yes)
        return True

    def run(feedback: _Feedback) -> library.ApplyResult:
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
            err.print("[ds.blocked]Nothing applied: resolve or allow the blocked items above first.[/]")
            raise typer.Exit(3) from None

    result = _with_feedback(run)
    if result.applied:
        desired, skipped = reviewed[0].desired, set(result.skipped)
        tables, views = len(desired.tables.keys() - skipped), len(desired.views.keys() - skipped)
        err.print(
            f"[ds.ok]Applied {result.applied} statement{'s' if result.applied != 1 else ''} (plan {result.plan_id}); "
            f"{'all ' if not result.skipped else ''}{objects_match(tables, views, 'the specs')}.[/]"
        )
    if result.exit_code:
        raise typer.Exit(result.exit_code)


def _confirm(yes: bool) -> None:
    if yes:
        return
    if not sys.stdin.isatty():
        err.print("[ds.blocked]Refusing to apply without confirmation: pass --yes.[/]")
        raise typer.Exit(1)
    if not typer.confirm("Apply these changes?", default=False):
        err.print("Cancelled; nothing applied.")
        raise typer.Exit(1)


def _apply_saved(
    path: Path,
    saved: planfile.SavedPlan,
    yes: bool,
    allowed: frozenset[Hazard],
    parallel: int,
    project: Project,
    rehearse: bool = False,
) -> None:
    _guard(lambda: library.refuse_if_specs_changed(saved, project))
    if saved.blocked:
        _fail(UnsafePlanError(f"plan {saved.plan_id} has blocked changes; make a new plan once they are resolved"))
    if not saved.statements:
        err.print(Text(f"Plan {saved.plan_id}: nothing to apply.", style="ds.ok"))
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
        tables.append(len(set(found.tables) - views_of(found.review.plan, found.desired)))
        on = objects_of([s.table for s in saved.statements], views_changed(found.review.plan.actions))
        err.print(Text(f"Plan {saved.plan_id}: {len(saved.statements)} statement(s) on {on}:"))
        for statement in saved.statements:
            err.print(Text(f"  {statement.sql.splitlines()[0]}", style="ds.muted"))
        _confirm(yes)
        return True

    def run(feedback: _Feedback) -> library.ApplyResult:
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
    err.print(
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

    from delta_sync.spark.jars import delta_jars
    from delta_sync.spark.submit import (
        catalog_refused,
        give_catalog_to_driver,
        package_zip,
        run_submit,
        submit_command,
    )

    assert env.submit is not None
    home = api.env_home(project, env)
    if specs is not None and specs.is_file() and planfile.looks_like_plan(specs):
        plan_path = specs
    else:
        plan_path = _plan_in_child(specs, env, sorted(h.value for h in allowed), no_probes, home / "submit", rehearse)
    saved = _guard(lambda: planfile.load(plan_path))
    _guard(lambda: library.refuse_if_specs_changed(saved, project))
    with _status("Preparing spark-submit...") as on_status:
        jars = _guard(lambda: delta_jars(on_status))
        command = submit_command(
            env.submit, plan_path, home, jars, package_zip(home / "submit"), parallel, sorted(h.value for h in allowed)
        )
    if print_command:
        with _status("Preparing spark-submit...") as on_status:
            stopped = give_catalog_to_driver(env.submit, home, on_status)
        if stopped:
            err.print(
                Text("Stopped the delta-sync engine: the command's driver takes the local catalog.", style="ds.muted")
            )
        out.out(project.redact(shlex.join(command)), highlight=False)
        return
    if saved.blocked:
        _fail(UnsafePlanError(f"plan {saved.plan_id} has blocked changes; make a new plan once they are resolved"))
    if not saved.statements:
        err.print(Text("Nothing to apply.", style="ds.ok"))
        return
    from delta_sync.planfile import codec as plancodec

    typed = _guard(lambda: [plancodec.decode_action(a) for a in saved.typed_actions])
    on = objects_of([s.table for s in saved.statements], views_changed(typed))
    err.print(
        Text(
            f"Plan {saved.plan_id}: {len(saved.statements)} statement(s) on {on}, "
            f"through spark-submit --master {env.submit.master}."
        )
    )
    _confirm(yes)
    with _status("Preparing spark-submit...") as on_status:
        give_catalog_to_driver(env.submit, home, on_status)
    log = home / "logs" / "submit.log"
    with err.status("spark-submit: starting the driver..."):
        outcome = run_submit(command, log, lambda line: err.print(Text(project.redact(line))), project.redact)
    result = outcome.result
    if result is None:
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-15:])
        err.print(Text(project.redact(tail), style="ds.muted"))
        _fail(DeltaSyncError(f"spark-submit exited {outcome.exit_code} before running the plan; its log: {log}"))
    if result["status"] != "applied":
        message = Text("Error: ", style="ds.blocked")
        message.append(project.redact(catalog_refused(env.submit, home, log) or str(result["error"])))
        err.print(message)
        raise typer.Exit(outcome.exit_code or 1)
    err.print(
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


@app.command()
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
        typer.Option("--out", help="Save the rollback plan (for `delta-sync apply FILE`) instead of running it."),
    ] = None,
    env: EnvOpt = None,
) -> None:
    """Undo an applied plan from Delta's history: RESTORE where nobody wrote since, the reverse change
    planned forward where someone did (their rows are kept), DROP TABLE for a table it created.

    Exit 0: rolled back, or nothing to roll back; 3: something is blocked (nothing ran);
    4: a table moved while the rollback was reviewed; 1: error (e.g. no commit of that plan).
    """
    if out_file is not None and not out_file.parent.is_dir():
        _fail(DeltaSyncError(f"--out {out_file}: folder {out_file.parent} does not exist; create it first"))
    allowed = _guard(lambda: _allowed(allow))
    path = Path(plan_ref)
    saved_env = None
    if path.is_file() and planfile.looks_like_plan(path):
        saved_env = _guard(lambda: library.load_plan(path, env))[0].environment
    project, environment = _env(saved_env or env)
    allowed |= frozenset(environment.allow)
    if environment.submit is not None and out_file is None:
        # Reviewed here by a child (its Spark and the metastore's lock gone), run by spark-submit's driver.
        folder = api.env_home(project, environment) / "submit"
        made = _rollback_in_child(plan_ref, environment, sorted(h.value for h in allowed), folder)
        _apply_submitted(project, environment, made, yes, allowed, False, False, api.APPLY_PARALLEL)
        return
    reviewed = _with_feedback(
        lambda progress: library.plan_rollback(plan_ref, env=environment.name, allow=allowed, progress=progress)
    )
    undoes = str(reviewed.document["rolls_back"])
    if format is RollbackFormat.json:
        out.print_json(json.dumps(reviewed.document))
    else:
        out.print(render.render_text(reviewed.review.plan, reviewed.review.assessment))
        for entry in reviewed.document["rollback"]["nothing_to_undo"]:
            out.print(Text(f"{entry['table']}: nothing to undo: {entry['why']}", style="ds.muted"))
    if out_file is not None:
        try:
            reviewed.save(out_file)
        except DeltaSyncError as error:
            _fail(DeltaSyncError(f"--out {error}"))
        err.print(
            Text(
                f"Rollback plan {reviewed.id} (undoes plan {undoes}) saved to {out_file}; run it with: "
                f"delta-sync apply {out_file}"
            )
        )
        raise typer.Exit(3 if reviewed.blocked else 0)
    if reviewed.blocked:
        err.print("[ds.blocked]Nothing rolled back: resolve or allow the blocked items above first.[/]")
        raise typer.Exit(3)
    if reviewed.is_empty:
        err.print(Text(f"Nothing to roll back: plan {undoes} has nothing left to undo.", style="ds.ok"))
        return
    _confirm(yes)
    result = _with_feedback(
        lambda progress: library.rollback(reviewed, env=environment.name, allow=allowed, progress=progress)
    )
    err.print(
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


@app.command("import")
def import_(
    targets: Annotated[
        list[str], typer.Argument(help="SCHEMA (all its tables), SCHEMA.TABLE or CATALOG.SCHEMA.TABLE.")
    ],
    out_dir: Annotated[Path, typer.Option("--out", help="Folder to write the specs into.")] = Path("specs"),
    force: Annotated[bool, typer.Option("--force", help="Overwrite spec files that already exist.")] = False,
    env: EnvOpt = None,
) -> None:
    """Write spec files from live tables, one per table, so that `plan` right after shows no changes."""
    from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
    from rich.progress import Progress as Bar

    columns = (
        TextColumn("Importing"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.description}"),
    )
    bar = Bar(*columns, console=err, transient=True)
    task = bar.add_task("", start=False)

    def run(feedback: _Feedback) -> library.Imported:
        def progress(event: Progress) -> None:
            if event.step is None:
                feedback(event)
                return
            if not bar.live.is_started:
                feedback.pause()
                bar.start()
            bar.update(task, total=event.total, completed=event.step, description=event.table or "")

        try:
            return library.import_specs(targets, out_dir, env=env, force=force, progress=progress)
        finally:
            bar.stop()

    imported = _with_feedback(run)
    written, skipped = imported.written, imported.skipped
    for line in skipped:
        err.print(Text(f"skipped {line}", style="ds.change"))
    err.print(Text(f"Wrote {len(written)} spec file(s) under {out_dir}/.", style="ds.ok"))


rehearsal_app = typer.Typer(
    cls=_Commands, help="Shallow clones made by plan --rehearse.", no_args_is_help=True, add_completion=False
)
app.add_typer(rehearsal_app, name="rehearsal")


@rehearsal_app.command("clean")
def rehearsal_clean(specs: SpecsArg = None, env: EnvOpt = None) -> None:
    """Drop the clones rehearsals left behind (a rehearsal killed before it dropped its clones); the next
    rehearsal does this too, for clones whose process is gone."""
    dropped = _with_feedback(lambda progress: library.clean_rehearsals(specs, env=env, progress=progress))
    for name in dropped:
        out.print(Text(f"dropped {name}", style="ds.change"))
    err.print(Text(f"{len(dropped)} leftover clone(s) dropped.", style="ds.ok"))


@app.command()
def drift(
    specs: SpecsArg = None,
    format: Annotated[
        SqlFormat, typer.Option("--format", "-f", help="Output format (table = text).")
    ] = SqlFormat.table,
    env: EnvOpt = None,
) -> None:
    """Compare specs and live tables; for each drifted table, who changed it and when since the last apply.

    Exit 0: in sync; 2: drifted; 1: error.
    """

    result = _with_feedback(lambda progress: library.drift(specs, env=env, progress=progress))
    if format is SqlFormat.json:
        data = plan_json(result.plan)
        data["drift"] = {
            str(name): [
                {
                    "version": c.version,
                    "timestamp": c.timestamp,
                    "operation": c.operation,
                    "user": c.user,
                    "engine": c.engine,
                }
                for c in commits
            ]
            for name, commits in result.commits.items()
        }
        out.print_json(json.dumps(data))
    else:
        out.print(render.render_text(result.plan, views=views_of(result.plan, result.desired)))
        for name, commits in result.commits.items():
            if not commits:
                out.print(Text(f"{name}: no commits since the last delta-sync apply were found", style="ds.muted"))
            for c in commits:
                # Open-source Delta records no user; the writing engine is what is known then.
                who = f" by {c.user}" if c.user else f" (user not recorded; written by {c.engine})" if c.engine else ""
                out.print(Text(f"{name}: {c.operation} at {c.timestamp}{who} (version {c.version})", style="ds.change"))
    if result.commits:
        raise typer.Exit(2)


@app.command()
def check(
    specs: SpecsArg = None,
    format: Annotated[
        SqlFormat, typer.Option("--format", "-f", help="Output format (table = text).")
    ] = SqlFormat.table,
    env: EnvOpt = None,
) -> None:
    """Check every declared primary and foreign key against the data as it is now (no engine enforces them).

    Exit 0: every key holds; 3: the data breaks one; 1: error.
    """

    found = _with_feedback(lambda progress: library.check_keys(specs, env=env, progress=progress))
    if format is SqlFormat.json:
        data = [
            {
                "table": str(c.table),
                "key": c.key.name,
                "kind": "primary key" if isinstance(c.key, PrimaryKey) else "foreign key",
                "columns": list(c.key.columns),
                "violations": c.result.violations,
                "holds": c.holds,
            }
            for c in found
        ]
        out.print_json(json.dumps({"keys": data, "ok": all(c.holds for c in found)}))
    else:
        if not found:
            err.print("[ds.muted]No keys are declared in the specs.[/]")
        for c in found:
            out.print(_key_check_text(c))
    if not all(c.holds for c in found):
        raise typer.Exit(3)


def _key_check_text(found: api.KeyCheck) -> Text:
    key = found.key
    what = f"primary key {key.name} ({', '.join(key.columns)})"
    if isinstance(key, ForeignKey):
        what = f"foreign key {key.name} ({', '.join(key.columns)}) -> {key.table} ({', '.join(key.references)})"
    if found.holds:
        line = Text("✓ ", style="ds.ok")
        line.append(f"{found.table}: {what} holds")
        return line
    count = found.result.violations
    one = count == 1
    if isinstance(key, PrimaryKey):
        broken = "key value repeats or has a NULL part" if one else "key values repeat or have a NULL part"
    else:
        broken = "row has no parent row" if one else "rows have no parent row"
    line = Text("✗ ", style="ds.blocked")
    line.append(f"{found.table}: {what}: {count} {broken}")
    for row in literals.table_lines(found.result.samples):
        line.append(f"\n      {row}", style="ds.muted")
    return line


def _jsonable(value: Any) -> Any:
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    return str(value)


@app.command()
def sql(
    statement: Annotated[str, typer.Argument(help="One SQL statement.")],
    format: Annotated[SqlFormat, typer.Option("--format", "-f", help="Output format.")] = SqlFormat.table,
    limit: Annotated[int, typer.Option(help="Most rows to print.")] = 1000,
    env: EnvOpt = None,
    yes: Annotated[
        bool,
        typer.Option("--yes", "-y", help="Run a statement that deletes or overwrites rows or objects without asking."),
    ] = False,
) -> None:
    """Run SQL against the environment's catalog (backfills, inspection).

    Spark parses the statement first, running nothing. One that can delete or overwrite rows or objects is
    confirmed at a terminal, and needs --yes elsewhere: DELETE or UPDATE without WHERE; MERGE with a THEN DELETE
    clause or WHEN NOT MATCHED BY SOURCE; INSERT OVERWRITE, INSERT ... REPLACE WHERE (or USING, ON), LOAD DATA ...
    OVERWRITE; TRUNCATE; DROP TABLE, VIEW, SCHEMA, FUNCTION or INDEX; ALTER TABLE ... DROP COLUMN, CONSTRAINT,
    PARTITION or FEATURE, and REPLACE COLUMNS; CREATE OR REPLACE (table, view, function, clone), REPLACE TABLE;
    RESTORE; VACUUM (not DRY RUN); EXECUTE IMMEDIATE of a statement known only when it runs; a SQL script holding
    any of these (on Spark Connect, every script).
    """

    def opened() -> tuple[api.Catalog, str | None]:
        with _status("Starting Spark...") as on_status:
            catalog = api.open_catalog(api.environment(env)[1], on_status)
            if yes:
                return catalog, None
            on_status("Parsing the statement...")
            return catalog, catalog.statement_danger(statement)

    # The prompt waits for the spinner to end: Spark is started first, since only its parser can tell.
    catalog, danger = _guard(opened)
    if danger is not None:
        if not sys.stdin.isatty():
            _fail(DeltaSyncError(f"not run: {danger}; pass --yes to run it without a terminal to confirm at"))
        if not typer.confirm(f"{danger}. Run it?", default=False, err=True):
            err.print("Cancelled; nothing was run.")
            raise typer.Exit(1)

    def run() -> api.QueryResult:
        with _status("Running..."):
            return catalog.query(statement, limit)

    result = _guard(run)
    if format is SqlFormat.json:
        rows = [dict(zip(result.columns, map(_jsonable, row), strict=True)) for row in result.rows]
        out.print_json(json.dumps({"columns": list(result.columns), "rows": rows, "truncated": result.truncated}))
        return
    if not result.columns:
        err.print("[ds.ok]OK[/]")
        return
    grid = RichTable(*result.columns)
    for row in result.rows:
        grid.add_row(*("NULL" if v is None else str(v) for v in row))
    out.print(grid)
    if result.truncated:
        err.print(f"[ds.muted](first {limit} rows shown; use --limit)[/]")


def _version(value: bool) -> None:
    if value:
        out.print(f"delta-sync {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Show the version.")
    ] = False,
    no_engine: Annotated[
        bool,
        typer.Option(
            "--no-engine",
            help="Start Spark in this process instead of borrowing the warm engine's (also DELTA_SYNC_NO_ENGINE=1; "
            "the default when CI=true). Accepted after the command too.",
        ),
    ] = False,
) -> None:
    pass


engine_app = typer.Typer(
    cls=_Commands,
    help="The warm engine: a background process that keeps Spark running for the local catalog, so that "
    "commands after the first start in about a second. It stops after 10 minutes idle (DELTA_SYNC_ENGINE_IDLE).",
    no_args_is_help=True,
)
app.add_typer(engine_app, name="engine")


def _engine_home(env: str | None) -> Path:
    project, environment = _env(env)
    if environment.connect:
        _fail(DeltaSyncError(f"Environment {environment.name} uses Spark Connect: it has no engine of delta-sync's."))
    return api.env_home(project, environment)


@engine_app.command("status")
def engine_status(
    env: EnvOpt = None, format: Annotated[SqlFormat, typer.Option(help="text or json.")] = SqlFormat.table
) -> None:
    """Whether an engine runs for the environment's catalog, since when, and what it is running."""
    from delta_sync.spark import warm

    home = _engine_home(env)
    found = warm.engine_status(home)
    if format == SqlFormat.json:
        out.print_json(data={"running": found is not None, "home": str(home), **(found or {})})
        return
    if found is None:
        out.print(Text(f"No engine is running for {home}."))
        return
    started = time.strftime("%H:%M:%S", time.localtime(found["started"]))
    lines = Text(
        f"Engine running for {home}: pid {found['pid']} (JVM {found['jvm_pid']}), version {found['version']}\n"
    )
    lines.append(f"  started {started}, {found['served']} command(s) served")
    if found["stopping"]:
        lines.append(", stopping once the commands running end")
    elif not found["commands"]:
        lines.append(f", idle {found['idle_for']:.0f}s (stops after {found['idle_timeout']:.0f}s idle)")
    for running in found["commands"]:
        lines.append(f"\n  running ({running['seconds']:.0f}s): {running['command']} (pid {running['pid']})")
    out.print(lines)


@engine_app.command("stop")
def engine_stop(env: EnvOpt = None) -> None:
    """Stop the engine once the commands it runs end; the next command starts Spark again."""
    from delta_sync.spark import warm

    home = _engine_home(env)

    def waiting(running: int) -> None:
        err.print(Text(f"Waiting for {running} running command(s) to end...", style="ds.muted"))

    stopped = _guard(lambda: warm.stop_engine(home, waiting))
    out.print(
        Text(f"No engine was running for {home}." if stopped is None else f"Stopped the engine (pid {stopped.pid}).")
    )


def main() -> None:
    from delta_sync.spark import warm

    args = sys.argv[1:]
    end = args.index("--") if "--" in args else len(args)
    no_engine = "--no-engine" in args[:end]
    if no_engine:
        sys.argv = [sys.argv[0], *(a for i, a in enumerate(args) if not (a == "--no-engine" and i < end))]
    warm.enable(not no_engine)
    warm.notify = lambda message: err.print(Text(message, style="ds.change"))
    app()

"""Where a command runs: the project around the working directory, its environments and the catalog each
opens, the desired tables its specs declare, the hazards it allows, and whether a saved plan may run
there (its signature, its environment, its specs and settings unchanged), all checked before any Spark starts."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from delta_sync.model.catalog import Catalog
from delta_sync.model.errors import DeltaSyncError, SpecError
from delta_sync.model.state import CatalogState, Consumer
from delta_sync.planfile import document as planfile
from delta_sync.planfile import inputs
from delta_sync.planfile.document import StalePlanError
from delta_sync.planning.hazards import ALLOWABLE, Hazard
from delta_sync.review.results import Progress, ProgressCallback
from delta_sync.specs.project_file import load_project
from delta_sync.specs.settings import Environment, Project

PROJECT_FILE = "delta-sync.yaml"
STATE_DIR = ".delta-sync"


def project_root(start: Path | None = None) -> Path:
    """The nearest directory holding delta-sync.yaml or .delta-sync/, else the working directory."""
    here = (start or Path.cwd()).resolve()
    for candidate in (here, *here.parents):
        if (candidate / PROJECT_FILE).is_file() or (candidate / STATE_DIR).is_dir():
            return candidate
    return here


def environment(name: str | None = None) -> tuple[Project, Environment]:
    """The project around the working directory and its environment `name` (default: the project's)."""
    project = load_project(project_root())
    return project, project.env(name)


def env_home(project: Project, env: Environment) -> Path:
    """Where an environment keeps its embedded catalog: `.delta-sync/<env>/` (DELTA_SYNC_HOME overrides)."""
    override = os.environ.get("DELTA_SYNC_HOME")
    if override:
        return Path(override).resolve()
    return project.root / STATE_DIR / env.name


def open_catalog(env: Environment | None = None, on_status: Callable[[str], None] = lambda _m: None) -> Catalog:
    """The catalog `env` works on: through its Spark Connect server (connect:), else through an
    in-process session (the default environment without one)."""
    project, env = environment(None) if env is None else (load_project(project_root()), env)
    if env.connect:
        # A client session only: no JVM in this process; the token is masked in every message.
        from delta_sync.spark.connect import open_connect_catalog

        return open_connect_catalog(env.connect, on_status, project.redact)
    # Imported here so that `--help` and `validate` never load pyspark.
    from delta_sync.spark.catalog import SparkCatalog
    from delta_sync.spark.session import LocalCatalog

    master, conf = "local[*]", {}
    if env.spark is not None:
        master, conf = env.spark.master or master, dict(env.spark.conf)
    elif env.submit is not None:
        # plan reads in client mode with the job's settings (its catalog), on this machine.
        conf = {k: v for k, v in env.submit.conf.items() if not k.startswith(("spark.yarn.", "spark.kubernetes."))}
    return SparkCatalog(LocalCatalog(env_home(project, env), master, conf, redact=project.redact), on_status)


def project_env(env: str | None) -> tuple[Project, Environment]:
    project = load_project(project_root())
    return project, project.env(env)


def load_desired(project: Project, environment: Environment, specs: str | os.PathLike[str] | None) -> CatalogState:
    """The desired state of the specs in `specs` (default: the project's folder) for `environment`: its vars
    and catalog, its `defaults:` and `ignore:` (the project's with its own: specs.desired_state.with_project),
    its engines and `strict:`."""
    from delta_sync.specs.desired_state import with_project
    from delta_sync.specs.spec_files import load_specs as load

    folder = specs_folder(project, specs)
    if environment.strict and folder.resolve() != project.specs.resolve():
        raise DeltaSyncError(
            f"environment {environment.name} is strict: true, so every table and view no spec names is dropped; "
            f"{folder} is not the project's whole specs folder ({project.specs}), and the tables the other specs "
            "declare would be dropped. Plan the whole folder, or use an environment without strict: true."
        )
    desired = with_project(
        load(folder, environment.vars, environment.catalog, environment.name),
        environment.table_defaults,
        environment.ignore,
    )
    consumers = Consumer.of_texts(environment.readers, environment.writers)
    return replace(
        desired,
        consumers=consumers,
        strict=environment.strict,
        strict_origin=project.strict_origin(environment.name),
        column_order=environment.column_order != "ignore",
        policy=project.policy(environment.name) if environment.name in project.envs else None,
    )


def specs_folder(project: Project, specs: str | os.PathLike[str] | None) -> Path:
    return project.specs if specs is None else Path(specs)


def status_of(progress: ProgressCallback) -> Callable[[str], None]:
    return lambda message: progress(Progress(message))


def catalog_for(spark: Any, environment: Environment, progress: ProgressCallback) -> Catalog:
    on_status = status_of(progress)
    if spark is None:
        on_status("Reading the catalog...")
        return open_catalog(environment, on_status)
    from delta_sync.spark.given import session_catalog

    return session_catalog(spark, on_status)


def allowed_hazards(values: Iterable[str | Hazard] | None, environment: Environment) -> frozenset[Hazard]:
    """The hazard classes let through in `environment`: its own allow: and `values` (an --allow, or a library
    call's allow=); refused when one of them is in the environment's deny:."""
    allowed: set[Hazard] = set(environment.allow)
    for value in [values] if isinstance(values, str) else values or ():
        for name in str(value).split(","):
            if not name.strip():
                continue
            try:
                hazard = Hazard(name.strip())
            except ValueError:
                choices = ", ".join(h.value for h in sorted(ALLOWABLE))
                raise DeltaSyncError(f"allow {name.strip()}: not a hazard class; choose from {choices}") from None
            if hazard not in ALLOWABLE:
                raise DeltaSyncError(
                    f"allow {name.strip()}: {hazard.value} changes are always checked or blocked and cannot be allowed"
                )
            allowed.add(hazard)
    denied = sorted(allowed & set(environment.deny))
    if denied:
        # The one place every plan, apply and rollback (command line or library) reads what is allowed.
        names = ", ".join(hazard.value for hazard in denied)
        raise DeltaSyncError(
            f"allow {names}: environment {environment.name} denies {names} changes (deny: in {PROJECT_FILE}), "
            "and no --allow can override that"
        )
    return frozenset(allowed)


def specs_hash(folder: Path) -> str:
    """The hash a saved plan keeps of the spec files in `folder` (the project settings that make the desired
    state with them are recorded one by one: reviewed_settings)."""
    from delta_sync.specs.spec_files import spec_paths

    root = folder if folder.is_dir() else folder.parent
    return planfile.specs_hash(spec_paths(folder), root)


def reviewed_settings(project: Project, environment: Environment, plan_id: str) -> dict[str, Any]:
    """The project settings a plan of `environment` is reviewed with, as its file records them: every one that
    changes the review (planfile.inputs), a secret as a digest salted with `plan_id`."""
    return inputs.record(inputs.current(environment), project.secrets, plan_id)


def specs_dir(project: Project, folder: Path) -> str | None:
    """`folder` relative to the project root, as the plan file records it (None when outside the project)."""
    try:
        return folder.resolve().relative_to(project.root.resolve()).as_posix()
    except ValueError:
        return None


def is_plan_file(path: Path) -> bool:
    return path.is_file() and planfile.looks_like_plan(path)


def load_plan(path: Path, env: str | None = None) -> tuple[planfile.SavedPlan, str]:
    """A saved plan file, checked before any Spark starts: its format and checksum (an edit anywhere is
    refused, naming the field), its signature (when a key is set), its environment (an `env` naming another
    is refused) and its statements against its typed actions. Returns what the signature check said too."""
    saved = planfile.load(path)
    note = planfile.check_signature(path, os.environ.get(planfile.KEY_VARIABLE))
    refuse_other_env(saved, env)
    planfile.rebuild(saved)
    return saved, note


def refuse_other_env(saved: planfile.SavedPlan, env: str | None) -> None:
    if env is not None and env != saved.environment:
        raise planfile.RefusedPlanError(
            f"plan {saved.plan_id} was made for environment {saved.environment}, not {env}, so it was not "
            f"applied; run it with --env {saved.environment}, or make a plan with --env {env}"
        )


def plan_environment(saved: planfile.SavedPlan, spark: Any, on_driver: bool) -> Environment:
    """Where a saved plan runs: its environment; on a caller's session, that environment's settings
    when the project here has it (vars, allow), else the plan alone; on a spark-submit driver, the plan
    alone (the CLI checked the project before submitting, and a driver's folder may hold another copy)."""
    if saved.on_session and spark is None:
        raise planfile.RefusedPlanError(
            f"plan {saved.plan_id} was made on a SparkSession handed to delta-sync (spark=), so it was not "
            "applied through the environment's own catalog, which may be another one; apply it with spark= "
            "a session of the catalog it was made on"
        )
    if on_driver:
        return Environment(name=saved.environment)
    project = load_project(project_root())
    if spark is not None and saved.environment not in project.envs:
        return Environment(name=saved.environment)
    refuse_if_changed(saved, project)
    return project.env(saved.environment)


def with_timeout(environment: Environment, statement_timeout: str) -> Environment:
    """`environment` with the statement_timeout a submitting command gave its driver (`--statement-timeout`)."""
    try:
        return Environment.model_validate({**environment.model_dump(), "statement_timeout": statement_timeout})
    except ValidationError:
        raise DeltaSyncError(
            f"--statement-timeout {statement_timeout!r} is not a duration such as 30s, 10m or 2h"
        ) from None


def refuse_if_changed(saved: planfile.SavedPlan, project: Project) -> None:
    """A reviewed plan runs only on the inputs it was reviewed with: the project settings (refused first,
    naming the setting) and the spec files. Refused with exit 4, before any Spark starts; the spark-submit
    driver relies on the command having checked this before submitting."""
    refuse_if_settings_changed(saved, project)
    refuse_if_specs_changed(saved, project)


def refuse_if_settings_changed(saved: planfile.SavedPlan, project: Project) -> None:
    """Refused (exit 4) when a setting that changes the review (planfile.inputs: vars, catalog, strict, readers,
    writers, defaults, ignore, column_order) differs from what the plan was reviewed with, naming the first."""
    if saved.settings is None:
        if saved.rolls_back is not None:
            return  # a rollback is reviewed from Delta's history, with no project setting
        raise StalePlanError(
            f"plan {saved.plan_id} does not say which project settings it was reviewed with (its file was changed), "
            "so it was not applied; make a new plan and review it again"
        )
    if saved.environment not in project.envs:
        # Apply refuses an environment the project lacks on its own; on a caller's session the plan alone decides.
        return
    environment = project.env(saved.environment)
    found = inputs.differences(saved.settings, inputs.current(environment), project.secrets, saved.plan_id)
    if not found:
        return
    source = PROJECT_FILE if project.file is not None else f"the project, which has no {PROJECT_FILE},"
    if len(project.envs) > 1:
        source += f" (environment {environment.name})"
    raise StalePlanError(inputs.refusal(saved.plan_id, found, source))


def refuse_if_specs_changed(saved: planfile.SavedPlan, project: Project) -> None:
    """A reviewed plan must still be what the specs say: refused (exit 4) when they changed since. Where the
    plan's spec folder is not here (the plan travelled without the repository), the tables' fingerprints alone
    decide."""
    if saved.specs is None:
        return
    folder = project.root / saved.specs
    if not folder.exists() or specs_hash(folder) == saved.specs_hash:
        return
    raise StalePlanError(
        f"the specs in {saved.specs}/ changed since plan {saved.plan_id} was made, so it was not applied; make a "
        "new plan and review it again"
    )


def refuse_if_changed_here(path: Path) -> None:
    """`show`'s check of a plan file against the project around the working directory, as apply's: only when
    that project can be read and resolves the plan's environment, since `show` needs neither (a plan is shown
    wherever it travelled, e.g. in a CI job without the catalog's secrets)."""
    saved = planfile.load(path)
    try:
        project = load_project(project_root())
        if saved.environment in project.envs:
            project.env(saved.environment)  # raises when one of its ${env:NAME} is not set here
    except SpecError:
        return
    refuse_if_changed(saved, project)

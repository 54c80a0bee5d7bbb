"""Where a command runs: the project around the working directory, its environments and the catalog each
opens, the desired tables its specs declare, the hazards it allows, and whether a saved plan may run
there (its signature, its environment, its specs unchanged), all checked before any Spark starts."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any

from delta_sync.model.catalog import Catalog
from delta_sync.model.errors import DeltaSyncError
from delta_sync.model.state import CatalogState, Consumer
from delta_sync.planfile import document as planfile
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
    and catalog, the project's `defaults:` and `ignore:` (specs.desired_state.with_project), its engines
    and `strict:`."""
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
        project.ignore,
    )
    consumers = Consumer.of_texts(environment.readers, environment.writers)
    return replace(desired, consumers=consumers, strict=environment.strict)


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


def specs_hash(folder: Path, project: Project | None = None, environment: Environment | None = None) -> str:
    """The hash a saved plan keeps of what made its desired state: the spec files in `folder`, and the project
    settings that change it (`environment`'s merged `defaults:`, the `ignore:` patterns)."""
    from delta_sync.specs.spec_files import spec_paths

    root = folder if folder.is_dir() else folder.parent
    return planfile.specs_hash(spec_paths(folder), root, desired_settings(project, environment))


def desired_settings(project: Project | None, environment: Environment | None) -> dict[str, Any]:
    """The project settings that change the desired state the specs make, as plain data: the environment's
    table defaults and the ignore patterns (sorted: their order changes nothing); empty parts left out, so a
    project without them hashes its specs alone."""
    settings: dict[str, Any] = {}
    if environment is not None and environment.table_defaults:
        settings["defaults"] = environment.table_defaults
    if project is not None and project.ignore:
        settings["ignore"] = sorted(project.ignore)
    return settings


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
    refuse_if_specs_changed(saved, project)
    return project.env(saved.environment)


def refuse_if_specs_changed(saved: planfile.SavedPlan, project: Project) -> None:
    """A reviewed plan must still be what the specs, and the project's `defaults:` and `ignore:`, say: refused
    (exit 4) when they changed since. Where the plan's spec folder is not here (the plan travelled without the
    repository), the tables' fingerprints alone decide."""
    if saved.specs is None:
        return
    folder = project.root / saved.specs
    environment = project.envs.get(saved.environment)
    if not folder.exists() or specs_hash(folder, project, environment) == saved.specs_hash:
        return
    settings = f"the defaults: or ignore: settings in {PROJECT_FILE}"
    if desired_settings(project, environment) and specs_hash(folder) == saved.specs_hash:
        what = f"{settings} changed"  # the specs are as they were: the plan was made before the settings
    elif any(desired_settings(project, env) for env in project.envs.values()):
        what = f"the specs in {saved.specs}/ changed, or {settings} did,"
    else:
        what = f"the specs in {saved.specs}/ changed"
    raise StalePlanError(
        f"{what} since plan {saved.plan_id} was made, so it was not applied; make a new plan and review it again"
    )

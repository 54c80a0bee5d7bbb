"""`delta-sync doctor`: what a command needs, checked in order, one finding each; with `write`, what the catalog
accepts of the statements delta-sync relies on, tried in a scratch schema made for it and always dropped.

The probes of the machine are `delta_sync/spark/doctor_probes.py`; the findings and their lines are
`delta_sync/render/doctor.py`. The catalog is opened as every command opens it (`environments.open_catalog`),
and the capabilities are statements run on the `Catalog` port, so they hold for every kind of catalog.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from delta_sync.model.catalog import Catalog, StatementFailed
from delta_sync.model.errors import DeltaSyncError
from delta_sync.model.state import Capabilities, SchemaName, TableName
from delta_sync.render.doctor import Check, Report, Status, failure, ok, report, warning
from delta_sync.review import environments
from delta_sync.review.results import Progress, ProgressCallback
from delta_sync.specs.settings import PACKAGES_KEY, Environment, Project

SCRATCH_PREFIX = "delta_sync_doctor_"
UNITY_PLUGIN = "io.unitycatalog.spark.UCSingleCatalog"
_NOT_NEEDED = "not needed: Spark Connect runs no JVM on this machine"


def diagnose(env: str | None = None, write: bool = False, progress: ProgressCallback = lambda _p: None) -> Report:
    """Every check for environment `env` (default: the project's), in the order a command meets them."""

    def on_status(message: str) -> None:
        progress(Progress(message))

    try:
        project, environment = environments.environment(env)
    except DeltaSyncError as exc:
        fix = f"fix {environments.PROJECT_FILE}, or name an environment it has with --env"
        return report(env or "?", [failure("project", "Project", str(exc), fix)])
    from delta_sync.spark import doctor_probes as probes

    checks: list[Check] = [ok("project", "Project", f"{project.root}, environment {environment.name}")]
    conf = spark_conf(environment)
    home = environments.env_home(project, environment)
    if environment.connect:
        checks += [
            ok("java", "Java", _NOT_NEEDED),
            ok("versions", "pyspark and delta-spark", _NOT_NEEDED),
            ok("jars", "Delta jars cache", _NOT_NEEDED),
            ok("maven", "Maven", _NOT_NEEDED),
        ]
        jars_ready = False
        delta = None
    else:
        on_status("Checking Java...")
        checks.append(probes.java_check())
        packages, problem = _packages(conf)
        mvn = probes.maven_command()
        on_status("Checking the Delta jars...")
        found = probes.jars_check(packages, mvn)
        checks += [probes.versions_check(found.version), problem or found.check]
        on_status("Checking Maven...")
        checks.append(probes.maven_check(found.complete, mvn))
        jars_ready, delta = found.complete and problem is None, found.delta
        on_status("Checking object storage...")
        checks += _storage(project, environment, conf)
    on_status("Checking the catalog...")
    catalog_checks, opened = _catalog(project, environment, conf, home, checks, jars_ready, on_status)
    checks += catalog_checks
    if not environment.connect:
        checks.append(probes.archive_check(delta, conf))
    checks.append(_engine(probes, environment, home, conf))
    if write:
        checks += _writes(project, environment, opened, checks, on_status)
    return report(environment.name, checks)


def spark_conf(environment: Environment) -> dict[str, str]:
    """The Spark settings the environment's session starts with (what open_catalog gives it, with what object
    storage adds: S3A's packages are part of its jars cache)."""
    from delta_sync.spark.object_storage import session_conf

    if environment.spark is not None:
        return session_conf(environment.spark.conf)
    if environment.submit is not None:
        return session_conf(
            {k: v for k, v in environment.submit.conf.items() if not k.startswith(("spark.yarn.", "spark.kubernetes."))}
        )
    return {}


def master_of(environment: Environment) -> str:
    if environment.spark is not None and environment.spark.master:
        return environment.spark.master
    return "local[*]"


def unity_catalogs(conf: Mapping[str, str]) -> list[tuple[str, str, str | None]]:
    """The Unity Catalog catalogs the settings declare: (name, uri, token)."""
    found = []
    for key, value in conf.items():
        name = key.removeprefix("spark.sql.catalog.")
        if key.startswith("spark.sql.catalog.") and "." not in name and value.strip() == UNITY_PLUGIN:
            token = conf.get(f"{key}.token") or conf.get(f"{key}.auth.token")
            found.append((name, conf.get(f"{key}.uri", ""), token))
    return sorted(found)


def _packages(conf: Mapping[str, str]) -> tuple[tuple[str, ...], Check | None]:
    from delta_sync.spark.jars import parse_packages

    try:
        return parse_packages(conf.get(PACKAGES_KEY, "")), None
    except ValueError as exc:
        return (), failure(
            "jars", "Delta jars cache", f"{PACKAGES_KEY}: {exc}", f"fix packages: in {environments.PROJECT_FILE}"
        )


def _storage(project: Project, environment: Environment, conf: Mapping[str, str]) -> list[Check]:
    """The buckets of the warehouse and of the specs' external tables reached, the connectors of other object
    stores named, and whether commits on S3 are safe from one driver only."""
    try:
        desired = environments.load_desired(project, environment, None)
        tables = [t.location for t in desired.tables.values() if t.location]
    except DeltaSyncError:
        tables = []  # a spec's own problem is for validate and plan to report; the warehouse is still checked
    from delta_sync.spark import storage_probes

    locations = storage_probes.storage_locations(conf, tables)
    checks: list[Check] = storage_probes.storage_checks(locations, conf, project.redact)
    concurrency = storage_probes.concurrency_check(conf, locations)
    return [*checks, concurrency] if concurrency is not None else checks


def _failed(checks: Sequence[Check], *names: str) -> Check | None:
    return next((c for c in checks if c.name in names and c.status == Status.FAILURE), None)


def _catalog(
    project: Project,
    environment: Environment,
    conf: Mapping[str, str],
    home: Any,
    before: Sequence[Check],
    jars_ready: bool,
    on_status: Callable[[str], None],
) -> tuple[list[Check], Catalog | None]:
    """The catalog's server reachable; the embedded one opened, unless the warm engine or another process holds
    it (Derby admits one process): then the engine is asked instead, or the holder named."""
    from delta_sync.spark import doctor_probes as probes
    from delta_sync.spark import servers, session

    if environment.connect:
        return [probes.connect_check(environment.connect, project.redact)], None
    checks: list[Check] = []
    master = probes.master_check(master_of(environment), project.redact)
    if master is not None:
        checks.append(master)
    unity = unity_catalogs(conf)
    for name, uri, token in unity:
        checks.append(probes.unity_check(name, uri, token, project.redact))
    metastore = servers.metastore_uris(conf)
    if metastore is not None:
        checks.append(probes.metastore_check(*metastore, redact=project.redact))
    if metastore is not None or unity:
        return checks, None
    title = "Local catalog"
    holder = probes.local_holder(home)
    if holder.kind == "engine" and holder.status is not None:
        checks.append(ok("catalog", title, f"{home}, held by the warm engine ({probes.engine_line(holder.status)})"))
        return checks, None
    if holder.kind == "other":
        fix = f"wait for it to end, or stop it ({session.engine_hint(home)} if it is an engine)"
        checks.append(warning("catalog", title, f"{home} is in use by another process ({holder.who}), not opened", fix))
        return checks, None
    # A warehouse Spark cannot reach would hold the catalog's start in S3A's retries: the bucket comes first.
    blocker = _failed([*before, *checks], "java", "versions", "maven", "master", "storage")
    if blocker is not None or (not jars_ready and _failed(before, "jars")):
        why = blocker.title if blocker is not None else "Delta jars cache"
        checks.append(warning("catalog", title, f"{home} not opened: {why} failed (above)", f"fix {why} first"))
        return checks, None
    on_status(f"Opening the local catalog in {home}...")
    try:
        catalog = environments.open_catalog(environment, on_status)
        schemas = catalog.query("SHOW SCHEMAS", 10_000)
    except DeltaSyncError as exc:
        checks.append(failure("catalog", title, str(exc), "see the message; `delta-sync engine status` names a holder"))
        return checks, None
    except StatementFailed as exc:
        checks.append(failure("catalog", title, _first(exc.failure.message), "see the Spark log under the catalog"))
        return checks, None
    checks.append(ok("catalog", title, f"{home}: opened, {len(schemas.rows)} schema(s)"))
    return checks, catalog


def _engine(probes: Any, environment: Environment, home: Any, conf: Mapping[str, str]) -> Check:
    from delta_sync.spark import engine_control

    if environment.connect:
        return ok("engine", "Warm engine", "not used: Spark Connect")
    master = master_of(environment)
    if not master.strip().startswith("local"):
        return ok("engine", "Warm engine", f"not used: the master is {master}")
    if environment.submit is not None:
        return ok("engine", "Warm engine", "not used: apply runs through spark-submit")
    used = engine_control.command_line() and engine_control.wanted(master)
    why = "CI=true or DELTA_SYNC_NO_ENGINE / --no-engine" if engine_control.command_line() else "not a command line"
    check: Check = probes.engine_check(home, used or engine_control.held_by_engine(home) is not None, why)
    return check


# --- what the catalog accepts ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Capability:
    """One thing delta-sync relies on, as the statements that show it; `expected` says, from the catalog's
    Capabilities, why a refusal is expected there (None: it must be accepted)."""

    name: str
    title: str
    statements: tuple[str, ...]
    expected: Callable[[Capabilities], str | None] = lambda _c: None
    accepted_note: Callable[[Capabilities], str] = lambda _c: "accepted"


def _keys_refused(capabilities: Capabilities) -> str | None:
    if capabilities.table_constraints:
        return None
    return (
        f"refused, as expected on {capabilities.kind} (open-source Delta): "
        "delta-sync keeps primary and foreign keys as table properties"
    )


def _keys_accepted(capabilities: Capabilities) -> str:
    if capabilities.table_constraints:
        return "accepted: delta-sync declares keys as DDL here"
    return "accepted; delta-sync keeps keys as table properties on this catalog all the same"


def _rename_refused(capabilities: Capabilities) -> str | None:
    if capabilities.rename_column:
        return None
    return (
        f"column mapping accepted, RENAME COLUMN refused, as expected on {capabilities.kind}: delta-sync blocks renames"
    )


CAPABILITIES: tuple[Capability, ...] = (
    Capability("check", "CHECK constraints", ("ALTER TABLE {t} ADD CONSTRAINT doctor_amount CHECK (amount >= 0)",)),
    Capability(
        "column_mapping",
        "Column mapping",
        (
            "ALTER TABLE {t} SET TBLPROPERTIES ('delta.columnMapping.mode' = 'name')",
            "ALTER TABLE {t} RENAME COLUMN label TO title",
        ),
        _rename_refused,
    ),
    Capability(
        "type_widening",
        "Type widening",
        (
            "ALTER TABLE {t} SET TBLPROPERTIES ('delta.enableTypeWidening' = 'true')",
            "ALTER TABLE {t} ALTER COLUMN qty TYPE BIGINT",
        ),
    ),
    Capability(
        "column_defaults",
        "Column defaults",
        (
            "ALTER TABLE {t} SET TBLPROPERTIES ('delta.feature.allowColumnDefaults' = 'supported')",
            "ALTER TABLE {t} ALTER COLUMN note SET DEFAULT 'none'",
        ),
    ),
    Capability("shallow_clone", "SHALLOW CLONE", ("CREATE TABLE {clone} SHALLOW CLONE {t}",)),
    Capability(
        "key_constraints",
        "Key constraints as DDL",
        ("ALTER TABLE {t} ADD CONSTRAINT doctor_pk PRIMARY KEY (id)",),
        _keys_refused,
        _keys_accepted,
    ),
)


def scratch_schema(catalog: str | None) -> SchemaName:
    return SchemaName(catalog, f"{SCRATCH_PREFIX}{os.getpid()}_{os.urandom(3).hex()}")


def _writes(
    project: Project,
    environment: Environment,
    opened: Catalog | None,
    before: Sequence[Check],
    on_status: Callable[[str], None],
) -> list[Check]:
    blocker = _failed(before, "project", "java", "versions", "maven", "master", "storage", "catalog")
    if blocker is not None:
        return [
            warning(c.name, c.title, f"not checked: {blocker.title} failed (above)", f"fix {blocker.title} first")
            for c in CAPABILITIES
        ]
    try:
        catalog = opened or environments.open_catalog(environment, on_status)
    except DeltaSyncError as exc:
        return [failure("scratch", "Scratch schema", f"could not open the catalog: {exc}", "see the message")]
    return capability_checks(catalog, scratch_schema(environment.catalog), on_status)


def capability_checks(
    catalog: Catalog, schema: SchemaName, on_status: Callable[[str], None] = lambda _m: None
) -> list[Check]:
    """Each capability tried on a table of a scratch schema made for it, which is dropped whatever happens
    (a refusal, an error, Ctrl-C); one more check says whether it was."""
    table = TableName(schema.catalog, schema.name, "doctor")
    clone = TableName(schema.catalog, schema.name, "doctor_clone")
    names = {"t": table.sql(), "clone": clone.sql()}
    checks: list[Check] = []
    with _scratch(catalog, schema, checks, on_status):
        on_status(f"Creating the scratch schema {schema}...")
        try:
            catalog.execute(f"CREATE SCHEMA {schema.sql()}")
            catalog.execute(
                f"CREATE TABLE {table.sql()} (id BIGINT NOT NULL, label STRING, amount INT, qty INT, note STRING) "
                "USING DELTA"
            )
        except (StatementFailed, DeltaSyncError) as exc:
            checks.append(failure("delta_table", "Delta table", f"could not create {table}: {_message(exc)}", _ASK))
            return checks
        capabilities = _capabilities(catalog, table)
        for capability in CAPABILITIES:
            on_status(f"Checking {capability.title} in {schema}...")
            checks.append(_try(catalog, capability, names, capabilities))
    return checks


_ASK = "this catalog refuses a statement delta-sync plans; plans that need it will fail at apply"


def _try(catalog: Catalog, capability: Capability, names: Mapping[str, str], capabilities: Capabilities) -> Check:
    for statement in capability.statements:
        try:
            catalog.execute(statement.format(**names))
        except (StatementFailed, DeltaSyncError) as exc:
            expected = capability.expected(capabilities)
            if expected is not None:
                return ok(capability.name, capability.title, expected)
            return failure(capability.name, capability.title, f"refused: {_message(exc)}", _ASK)
    return ok(capability.name, capability.title, capability.accepted_note(capabilities))


def _capabilities(catalog: Catalog, table: TableName) -> Capabilities:
    try:
        return catalog.read([table]).capabilities_of(table.catalog)
    except (StatementFailed, DeltaSyncError):
        return Capabilities()


@contextlib.contextmanager
def _scratch(
    catalog: Catalog, schema: SchemaName, checks: list[Check], on_status: Callable[[str], None]
) -> Iterator[None]:
    try:
        yield
    finally:
        on_status(f"Dropping the scratch schema {schema}...")
        checks.append(_drop(catalog, schema))


def _drop(catalog: Catalog, schema: SchemaName) -> Check:
    statement = f"DROP SCHEMA IF EXISTS {schema.sql()} CASCADE"
    for attempt in (1, 2):
        try:
            catalog.execute(statement)
            return ok("scratch", "Scratch schema", f"{schema} created and dropped")
        except KeyboardInterrupt:
            if attempt == 2:  # a second Ctrl-C: the user wants out; the check says what is left
                raise
        except (StatementFailed, DeltaSyncError) as exc:
            return failure(
                "scratch", "Scratch schema", f"could not drop {schema}: {_message(exc)}", f"run: {statement}"
            )
    return failure("scratch", "Scratch schema", f"{schema} may be left", f"run: {statement}")


def _message(exc: BaseException) -> str:
    if isinstance(exc, StatementFailed):
        return _first(exc.failure.message)
    return _first(str(exc))


def _first(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[0][:300] if lines else "no message"

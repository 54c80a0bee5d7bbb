"""The settings of a project, as `delta-sync.yaml` declares them: the environments (catalog, spec vars,
allowed hazards, the engines that must keep reading and writing the tables, rehearsal limits) and the one
way each runs Spark (in this process, through spark-submit, or a Spark Connect server), validated as each
value is read. A value filled in from `${env:NAME}` is a secret: the models never show it in repr()/str(),
`public_dict()` masks it, and `Project.redact` masks it in any other text (logs, plan files) before it
leaves the process.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, Literal, Self

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PrivateAttr,
    model_validator,
)

from delta_sync.model.errors import SpecError, SpecProblem
from delta_sync.model.policy import parse_duration, parse_size
from delta_sync.model.state import Limit, Origin, Policy, Protection, is_simple_ident
from delta_sync.planning.compatibility import support, support_matrix
from delta_sync.planning.hazards import Hazard
from delta_sync.planning.rehearsal import DEFAULT_MAX_BYTES, valid_schema_setting
from delta_sync.specs.lint_rules import LintSettings
from delta_sync.specs.policy_settings import (
    _LIMITS_HELP,
    _PROTECT_HELP,
    _RULES_HELP,
    _SAFE_BELOW_HELP,
    _allowable,
    _deniable,
    _Duration,
    _ignore_pattern,
    _Limits,
    _Protect,
    _Rules,
    _SafeBelow,
)
from delta_sync.specs.spec_values import Invalid, _property_key, _property_value
from delta_sync.specs.yamldoc import shown_path

PROJECT_FILE = "delta-sync.yaml"
DEFAULT_ENV = "local"
DEFAULT_SPECS = "specs"
REDACTED = "***"

_ENV_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*\Z")


_RUNNERS = ("spark", "submit", "connect")
_RUNNERS_HINT = (
    "an environment runs Spark one way: spark: (in this process), submit: (through spark-submit) "
    "or connect: (a Spark Connect server); keep one"
)


def _text(value: Any) -> Any:
    # Spark reads every setting as text; YAML's `8` / `true` are accepted as the obvious strings.
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    return value


def _non_empty(text: str) -> str:
    if not text.strip():
        raise Invalid("value is empty", "give a value, or remove the key")
    return text


def _env_name(text: str) -> str:
    if not _ENV_NAME.match(text):
        raise Invalid(
            f"environment name `{text}` must be letters, digits, `_` and `-`",
            "it is typed on the command line (--env NAME); rename it, e.g. staging",
        )
    return text


def _var_name(text: str) -> str:
    if not is_simple_ident(text):
        raise Invalid(
            f"variable name `{text}` must be letters, digits and underscores, not starting with a digit",
            "specs refer to it as ${name}; rename it, e.g. suffix",
        )
    return text


class _Located(Invalid):
    """A verdict on a mapping about one of its values: `at` is that value's place under the mapping, where
    the problem is reported."""

    def __init__(self, message: str, hint: str, at: tuple[Any, ...]) -> None:
        super().__init__(message, hint)
        self.at = at


def _consumer(text: str) -> str:
    """`<engine> <version>` as the matrix knows it (delta_sync.planning.compatibility.support_matrix), in its
    canonical spelling."""
    name, _, version = text.strip().partition(" ")
    engine = support_matrix.engine(name)
    if engine is None:
        names = [e.name for e in support_matrix.ENGINES]
        close = difflib.get_close_matches(name.lower(), names, n=1)
        hint = (f"did you mean `{close[0]}`? " if close else "") + "engines: " + ", ".join(names)
        raise Invalid(f"`{name}` is not an engine delta-sync knows", hint)
    version = version.strip()
    if not engine.versioned:
        if version:
            raise Invalid(f"{engine.name} takes no version", f"write `{engine.name}`")
        return engine.name
    example = f"e.g. `{engine.name} {_EXAMPLE_VERSIONS.get(engine.name, '1.0')}`"
    if not version:
        raise Invalid(f"{engine.name} needs its version", example)
    parsed = support.parse_version(version)
    if parsed is None:
        raise Invalid(f"`{version}` is not a version of {engine.name}", example)
    return f"{engine.name} {support.version_text(parsed)}"


_EXAMPLE_VERSIONS = {"trino": "440", "athena": "3", "databricks-runtime": "13.3", "delta-rs": "0.17", "duckdb": "1.1"}
_Consumers = list[Annotated[str, AfterValidator(_consumer)]] | None


def _connect_url(text: str) -> str:
    if not text.startswith("sc://"):
        raise Invalid(f"`{text}` is not a Spark Connect URL", "e.g. connect: sc://host:15002")
    return text


# A Maven coordinate, as delta_sync.spark.jars checks it (that module is not imported here: it is
# the Spark side, and validate must stay fast).
_COORDINATE = re.compile(r"[A-Za-z0-9_.-]+:[A-Za-z0-9_.-]+:[A-Za-z0-9_.+-]+\Z")
# Where an environment's packages go among its Spark settings; delta-sync resolves them itself.
PACKAGES_KEY = "spark.jars.packages"


def _coordinate(text: str) -> str:
    if not _COORDINATE.match(text):
        raise Invalid(
            f"`{text}` is not a Maven coordinate",
            "write groupId:artifactId:version, e.g. io.unitycatalog:unitycatalog-spark_4.2_2.13:0.6.0",
        )
    return text


_Ignore = list[Annotated[str, AfterValidator(_ignore_pattern)]]
ColumnOrder = Literal["spec", "ignore"]


# A table property every table gets unless its spec sets it (or opts out with null): key -> value.
# Under envs.NAME, null removes a project-wide default for that environment.
# Checked as a spec's properties are (spec_models), without importing the spec's models: every command reads
# the project file, and building those models costs ~18 ms of start-up.
_Defaults = dict[Annotated[str, AfterValidator(_property_key)], Annotated[str | None, BeforeValidator(_property_value)]]
_DEFAULTS_HELP = (
    "Table properties every table gets unless its spec sets the key itself (null in a spec opts the table "
    "out), e.g. {delta.enableChangeDataFeed: true}"
)


def _mapping_or_null(value: Any) -> Any:
    # `local:` with nothing after it reads as null, and means "all defaults" as much as `local: {}` does.
    return {} if value is None else value


_Text = Annotated[str, BeforeValidator(_text)]
_Conf = dict[str, _Text]


class _Conflict(Invalid):
    """Keys that exclude each other; the problem points at the one written last."""

    def __init__(self, keys: list[str]) -> None:
        quoted = [f"`{key}`" for key in keys]
        super().__init__(f"{', '.join(quoted[:-1])} and {quoted[-1]} cannot be combined", _RUNNERS_HINT)
        self.keys = tuple(keys)


class _Model(BaseModel):
    # strict: YAML already yields typed values, so only the coercions declared here happen.
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    # The values filled in from environment variables; set by load_project on every model it builds.
    _secrets: frozenset[str] = PrivateAttr(default=frozenset())

    def __repr_args__(self) -> Iterator[tuple[str | None, Any]]:
        # repr() and str() end up in logs and tracebacks, where a credential must never be shown.
        for name, value in super().__repr_args__():
            yield name, _scrub(value, self._secrets)

    def public_dict(self) -> dict[str, Any]:
        """The model as JSON data with every secret masked: what may be printed or written to a plan file."""
        data: dict[str, Any] = _scrub(self.model_dump(mode="json"), self._secrets)
        return data


class SparkSettings(_Model):
    """A Spark session started in this process (client mode)."""

    master: Annotated[str, AfterValidator(_non_empty)] | None = Field(
        None, description="The master URL, e.g. spark://host:7077; default: local."
    )
    conf: _Conf = Field(default_factory=dict, description="Spark settings: key -> value.")
    packages: list[Annotated[str, AfterValidator(_coordinate)]] = Field(
        default_factory=list,
        description=(
            "Extra Maven packages for the session (groupId:artifactId:version), e.g. a catalog's Spark "
            "connector; fetched through Maven with Delta's jars, once, then used offline."
        ),
    )

    @model_validator(mode="after")
    def _packages_in_conf(self) -> Self:
        # The session is started from `conf`: the packages travel there, as Spark's own key for them,
        # next to any the settings name already (delta-sync fetches all of them itself).
        if self.packages:
            named = [p.strip() for p in self.conf.get(PACKAGES_KEY, "").split(",") if p.strip()]
            merged = list(dict.fromkeys([*named, *self.packages]))
            self.conf[PACKAGES_KEY] = ",".join(merged)
        return self


class SubmitSettings(_Model):
    """apply runs as a spark-submit job, e.g. on YARN in cluster mode."""

    master: Annotated[str, AfterValidator(_non_empty)] = Field(description="The master URL, e.g. yarn.")
    deploy_mode: Literal["client", "cluster"] = Field("client", description="client or cluster (default client).")
    conf: _Conf = Field(default_factory=dict, description="Spark settings: key -> value (--conf).")
    archives: list[str] = Field(default_factory=list, description="--archives, e.g. venv.tar.gz#environment.")
    py_files: list[str] = Field(default_factory=list, description="--py-files.")
    files: list[str] = Field(default_factory=list, description="--files.")
    spark_submit: Annotated[str, AfterValidator(_non_empty)] | None = Field(
        None, description="Path to spark-submit; default: the one of the installed pyspark."
    )


def _rehearsal_schema(value: str) -> str:
    problem = valid_schema_setting(value)
    if problem is not None:
        raise Invalid(f"rehearsal_schema `{value}` is not a schema name", problem)
    return value


class _EnvironmentFile(_Model):
    """One environment as written in the file, where its name is the key above it."""

    catalog: Annotated[str, AfterValidator(_non_empty)] | None = Field(
        None, description="The catalog for two-part table names in specs."
    )
    vars: dict[Annotated[str, AfterValidator(_var_name)], _Text] = Field(
        default_factory=dict, description="Values for ${name} in specs."
    )
    allow: list[Annotated[Hazard, BeforeValidator(_allowable)]] = Field(
        default_factory=list, description="Hazard classes allowed in this environment, e.g. [irreversible]."
    )
    deny: list[Annotated[Hazard, BeforeValidator(_deniable)]] = Field(
        default_factory=list,
        description="Hazard classes never allowed in this environment, e.g. [destructive]: plan and apply "
        "refuse an --allow of one.",
    )
    readers: _Consumers = Field(
        None, description="Engines that must keep reading the tables, e.g. [trino 440] (replaces the project's)."
    )
    writers: _Consumers = Field(
        None, description="Engines that must keep writing the tables, e.g. [delta-spark 3.1] (replaces the project's)."
    )
    rehearsal_schema: Annotated[str, AfterValidator(_rehearsal_schema)] | None = Field(
        None,
        description="Where plan --rehearse puts its shallow clones: schema or catalog.schema "
        "(default <schema>__delta_sync_rehearsal, dropped again once empty).",
    )
    rehearse_max_bytes: int = Field(
        DEFAULT_MAX_BYTES,
        ge=0,
        description="Larger tables whose rows the plan moves are rehearsed on a sampled copy (default 1 GiB).",
    )
    column_order: ColumnOrder | None = Field(
        None, description="spec or ignore: whether plan keeps the tables' columns in the specs' order (the project's)."
    )
    strict: bool = Field(
        False,
        description="The specs are the whole truth: every table or view in the specs' schemas that no spec "
        "names is planned to be dropped (destructive).",
    )
    defaults: _Defaults = Field(
        default_factory=dict,
        description=_DEFAULTS_HELP + "; key by key over the project's defaults:, null removes one here.",
    )
    ignore: _Ignore = Field(
        default_factory=list,
        description="More tables another tool manages in this environment, added to the project's ignore:, "
        "e.g. [scratch_*.*].",
    )
    protect: _Protect = Field(
        default_factory=list, description=_PROTECT_HELP + "; added to the project's protect: in this environment."
    )
    limits: _Limits = Field(default_factory=dict, description=_LIMITS_HELP + "; key by key over the project's.")
    safe_below: _SafeBelow = Field(
        default_factory=dict, description=_SAFE_BELOW_HELP + "; key by key over the project's."
    )
    rules: _Rules = Field(default_factory=list, description=_RULES_HELP + "; run after the project's.")
    statement_timeout: _Duration | None = Field(
        None,
        description="The longest a statement or a data check may run here, e.g. 30m: one running longer is "
        "cancelled, and apply stops as on Ctrl-C (exit 130); the next run finishes.",
    )
    spark: SparkSettings | None = Field(None, description="Run Spark in this process: {master:, conf:}.")
    submit: SubmitSettings | None = Field(None, description="Run apply through spark-submit: {master:, ...}.")
    connect: Annotated[str, AfterValidator(_connect_url)] | None = Field(
        None, description="A Spark Connect server, e.g. sc://host:15002."
    )

    @model_validator(mode="after")
    def _one_runner(self) -> Self:
        given = [key for key in _RUNNERS if getattr(self, key) is not None]
        if len(given) > 1:
            raise _Conflict(given)
        return self

    @model_validator(mode="after")
    def _allow_not_denied(self) -> Self:
        for index, hazard in enumerate(self.allow):
            if hazard in self.deny:
                hint = f"remove `{hazard}` from allow:, or from deny: if this environment may allow it"
                raise _Located(f"`{hazard}` is both allowed and denied here", hint, ("allow", index))
        return self


class Environment(_EnvironmentFile):
    """Where and how a command runs: catalog, spec variables, allowed hazards and the Spark to use. As loaded,
    its `defaults` and `ignore` are the project's with its own (project_file._environment): the one place a
    command reads them."""

    name: str

    @property
    def timeout_seconds(self) -> float | None:
        return parse_duration(self.statement_timeout) if self.statement_timeout is not None else None

    @property
    def table_defaults(self) -> dict[str, str]:
        """The table properties this environment gives every table: the project's `defaults:`, its own
        over them key by key (a null removing one)."""
        return {key: value for key, value in self.defaults.items() if value is not None}


class _ProjectFile(_Model):
    specs: Annotated[str, AfterValidator(_non_empty)] = Field(
        DEFAULT_SPECS, description="The folder with the table specs, relative to this file (default specs)."
    )
    default_env: Annotated[str, AfterValidator(_non_empty)] | None = Field(
        None, description=f"The environment used without --env (default {DEFAULT_ENV})."
    )
    readers: _Consumers = Field(None, description="Engines that must keep reading the tables, e.g. [trino 440].")
    writers: _Consumers = Field(None, description="Engines that must keep writing the tables, e.g. [delta-rs 0.17].")
    envs: (
        dict[
            Annotated[str, AfterValidator(_env_name)],
            Annotated[_EnvironmentFile, BeforeValidator(_mapping_or_null)],
        ]
        | None
    ) = Field(None, min_length=1, description=f"The environments: name -> settings (default {DEFAULT_ENV}: {{}}).")
    lint: LintSettings | None = Field(None, description="The rules `delta-sync lint` checks the specs against.")
    defaults: _Defaults = Field(default_factory=dict, description=_DEFAULTS_HELP + ".")
    ignore: _Ignore = Field(
        default_factory=list,
        description="Tables another tool manages, as globs on schema.table (case-insensitive), e.g. [dbt_*.*]: "
        "never unmanaged, dropped by strict: true, adopted or imported; no spec may name one.",
    )
    column_order: ColumnOrder = Field(
        "spec",
        description="spec (the default): a table's columns are in its spec's order, and plan adds and moves "
        "columns to keep them so; ignore: column order is left as it is, and plan says once where it differs.",
    )
    protect: _Protect = Field(default_factory=list, description=_PROTECT_HELP + ".")
    limits: _Limits = Field(default_factory=dict, description=_LIMITS_HELP + ".")
    safe_below: _SafeBelow = Field(default_factory=dict, description=_SAFE_BELOW_HELP + ".")
    rules: _Rules = Field(default_factory=list, description=_RULES_HELP + ".")


class Project(_Model):
    """The loaded project: absolute paths, and every environment under its name."""

    root: Path
    file: Path | None
    specs: Path
    default_env: str
    envs: dict[str, Environment]
    lint: LintSettings | None = None
    ignore: tuple[str, ...] = ()

    # Per environment, the `${env:NAME}` it reads that are not set: raised when it is used.
    _unset: dict[str, tuple[SpecProblem, ...]] = PrivateAttr(default_factory=dict)
    # The line of the file's `envs:` key, where an unknown environment is reported; 0: no such line.
    _envs_line: int = PrivateAttr(default=0)
    # Per environment, the line of its `strict: true`, where a drop of what no spec names comes from.
    _strict_lines: dict[str, int] = PrivateAttr(default_factory=dict)
    # The lines of the policy's entries (protect:, limits:, safe_below:, rules:), by their place in the file.
    _policy_lines: dict[tuple[Any, ...], int] = PrivateAttr(default_factory=dict)
    # Per environment, where each of its merged entries is written: ("protect", i) -> its place in the file.
    _policy_places: dict[str, dict[tuple[Any, ...], tuple[Any, ...]]] = PrivateAttr(default_factory=dict)

    @property
    def secrets(self) -> frozenset[str]:
        """The values filled in from environment variables."""
        return self._secrets

    def env(self, name: str | None = None) -> Environment:
        """The environment called `name`, or the default one."""
        key = self.default_env if name is None else name
        if key in self._unset:
            raise SpecError(self._unset[key])
        found = self.envs.get(key)
        if found is not None:
            return found
        known = ", ".join(sorted(self.envs))
        close = difflib.get_close_matches(key, list(self.envs), n=1)
        hint = (f"did you mean `{close[0]}`? " if close else "") + f"known environments: {known}"
        if not self._envs_line:
            hint += f"; declare others under envs: in {PROJECT_FILE}"
        # The name came from the command line: the file's place for it is its `envs:` key, if it has one.
        where = shown_path(self.file or self.root / PROJECT_FILE)
        raise SpecError([SpecProblem(where, self._envs_line, f"unknown environment `{key}`", hint)])

    def strict_origin(self, name: str) -> Origin | None:
        """Where environment `name` says `strict: true` (None: it does not, or the project has no file)."""
        line = self._strict_lines.get(name)
        if line is None or self.file is None or not self.envs[name].strict:
            return None
        return Origin(shown_path(self.file), line)

    def redact(self, text: str) -> str:
        """`text` with every secret replaced by ***."""
        return _redact(text, self._secrets)

    def policy(self, name: str) -> Policy | None:
        """Environment `name`'s policy, each entry with the line that writes it; None when it has none (then
        nothing a plan decides changes)."""
        env = self.envs[name]
        if not (env.protect or env.limits or env.safe_below or env.deny or env.rules):
            return None
        places = self._policy_places.get(name, {})

        def origin(*at: Any) -> Origin | None:
            place = places.get(at)
            line = self._policy_lines.get(place) if place is not None else None
            return Origin(shown_path(self.file), line) if line is not None and self.file is not None else None

        return Policy(
            protect=tuple(Protection(p, origin("protect", i)) for i, p in enumerate(env.protect)),
            deny=tuple(h.value for h in env.deny),
            limits=tuple(Limit(k, parse_size(v), v, origin("limits", k)) for k, v in env.limits.items()),
            safe_below=tuple(
                Limit(k.value, parse_size(v), v, origin("safe_below", k.value)) for k, v in env.safe_below.items()
            ),
            rules=tuple(env.rules),
        )


def _seal(value: Any, secrets: frozenset[str]) -> None:
    """Gives every model under `value` the secrets, so each one masks them wherever it is shown."""
    if isinstance(value, _Model):
        value._secrets = secrets
        for name in type(value).model_fields:
            _seal(getattr(value, name), secrets)
    elif isinstance(value, dict):
        for item in value.values():
            _seal(item, secrets)
    elif isinstance(value, list):
        for item in value:
            _seal(item, secrets)


def _redact(text: str, secrets: frozenset[str]) -> str:
    # Longest first: a secret that contains another one is masked whole.
    for secret in sorted(secrets, key=len, reverse=True):
        text = text.replace(secret, REDACTED)
    return text


def _scrub(value: Any, secrets: frozenset[str]) -> Any:
    """`value` with the secrets masked in every string, path, key and item, keeping the types otherwise."""
    if not secrets:
        return value
    if isinstance(value, str | Path):
        masked = _redact(str(value), secrets)
        if masked == str(value):
            return value
        return Path(masked) if isinstance(value, Path) else masked
    if isinstance(value, dict):
        return {_scrub(key, secrets): _scrub(item, secrets) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_scrub(item, secrets) for item in value)
    return value

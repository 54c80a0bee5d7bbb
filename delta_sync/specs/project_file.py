"""The project file `delta-sync.yaml` read into a Project: the only part of the project that touches
files. The file is optional, so a folder of specs keeps working on its own: without it there is one
environment, `local` (the embedded catalog), and the specs are in `specs/`. When present it is read by
yamldoc, as the specs are, so it gets the same protections against hostile YAML and the same
`file:line: message (hint)` problems, all collected into one SpecError. `${env:NAME}` keeps credentials out
of the file; a variable that is not set is a problem of the environments that read it, raised when one of
them is used: a `ci` environment that reads `METASTORE_URI` must not stop `--env local` on a laptop.
"""

from __future__ import annotations

import difflib
import os
import re
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo
from pydantic_core import ErrorDetails

from delta_sync.model.errors import SpecError, SpecProblem
from delta_sync.model.state import is_simple_ident
from delta_sync.specs.settings import (
    DEFAULT_ENV,
    DEFAULT_SPECS,
    PROJECT_FILE,
    Environment,
    Project,
    _Conflict,
    _EnvironmentFile,
    _Located,
    _ProjectFile,
    _redact,
    _seal,
)
from delta_sync.specs.spec_models import pydantic_problem
from delta_sync.specs.yamldoc import Doc, Hints, Unusable, kind_of, parse, shown_path

# `$${...}` is the escape for a literal `${...}`; the optional `$` in front tells the two apart.
_ENV_REF = re.compile(r"(\$?)\$\{env:([^}]*)\}")


_HINTS = Hints(
    empty=f"add e.g. `default_env: local`, or delete {PROJECT_FILE}",
    too_large="a project file is a few lines; is this the right file?",
    layout=f"write `key: value` lines, e.g. `specs: specs` and `envs:`; see {PROJECT_FILE} in the README",
)


def load_project(root: Path) -> Project:
    """The project in `root`: its delta-sync.yaml, or the defaults when there is none."""
    path = root / PROJECT_FILE
    if not path.exists():
        return _default_project(root)
    problems: list[SpecProblem] = []
    try:
        doc = parse(path, problems, _HINTS)
    except Unusable as exc:
        raise SpecError([SpecProblem(shown_path(path), *exc.args)]) from None
    filler = _EnvFiller(doc, problems)
    data = filler.fill(doc.data, ())
    project = _build(root, doc, data, problems, filler.unset_locs)
    secrets = frozenset(filler.secrets)
    if problems or project is None:
        # A message may quote a value (`got string '...'`), and that value may hold a secret.
        masked = (SpecProblem(p.file, p.line, _redact(p.message, secrets), _redact(p.hint, secrets)) for p in problems)
        raise SpecError(sorted(masked, key=lambda p: p.line))
    _seal(project, secrets)
    project._unset = {name: tuple(sorted(found, key=lambda p: p.line)) for name, found in filler.unset.items()}
    if "envs" in doc.data:
        project._envs_line = doc.line("envs")
        envs = doc.data["envs"] if isinstance(doc.data["envs"], dict) else {}
        project._strict_lines = {
            str(name): doc.line("envs", name, "strict")
            for name, env in envs.items()
            if isinstance(env, dict) and "strict" in env
        }
    return project


def _default_project(root: Path) -> Project:
    root = root.resolve()
    return Project(
        root=root,
        file=None,
        specs=root / DEFAULT_SPECS,
        default_env=DEFAULT_ENV,
        envs={DEFAULT_ENV: Environment(name=DEFAULT_ENV)},
    )


@dataclass
class _EnvFiller:
    """Fills `${env:NAME}` in every string value, noting unset variables and the secrets it used.

    An unset variable under `envs.NAME` is noted for that environment (`unset`), at the value that
    reads it (`unset_locs`, which keeps it as written); anywhere else it is a problem of the file.
    """

    doc: Doc
    problems: list[SpecProblem]
    secrets: set[str] = field(default_factory=set)
    unset: dict[str, list[SpecProblem]] = field(default_factory=dict)
    unset_locs: set[tuple[Any, ...]] = field(default_factory=set)

    def fill(self, value: Any, loc: tuple[Any, ...]) -> Any:
        if isinstance(value, str):
            return _ENV_REF.sub(lambda match: self._value(match, loc), value)
        if isinstance(value, dict):
            return {key: self.fill(item, (*loc, key)) for key, item in value.items()}
        if isinstance(value, list):
            return [self.fill(item, (*loc, i)) for i, item in enumerate(value)]
        return value

    def _value(self, match: re.Match[str], loc: tuple[Any, ...]) -> str:
        escaped, name = match.groups()
        if escaped:
            return match.group(0)[1:]
        if not is_simple_ident(name):
            message = f"`{match.group(0)}` does not name an environment variable"
            self.problems.append(self.doc.problem(loc, message, "write ${env:NAME}, e.g. ${env:SPARK_TOKEN}"))
            return match.group(0)
        value = os.environ.get(name)
        if value is None:
            message = f"environment variable {name} is not set"
            hint = f"set {name}, or remove ${{env:{name}}} from {PROJECT_FILE}"
            problem = self.doc.problem(loc, message, hint)
            if len(loc) > 2 and loc[0] == "envs" and isinstance(self.doc.data.get("envs"), dict):
                self.unset.setdefault(str(loc[1]), []).append(problem)
                self.unset_locs.add(loc)
            else:
                self.problems.append(problem)
            return match.group(0)
        if value:
            self.secrets.add(value)
        return value


def _build(
    root: Path, doc: Doc, data: dict[Any, Any], problems: list[SpecProblem], unset: set[tuple[Any, ...]]
) -> Project | None:
    try:
        parsed = _ProjectFile.model_validate(data)
    except ValidationError as exc:
        errors = [error for error in exc.errors() if not _reported_by_reader(error)]
        judged = [error for error in errors if not _waits_for_unset(error, unset)]
        problems.extend(_problem(doc, error) for error in judged)
        if judged or not errors:
            return None
        # Only values still holding an unset ${env:NAME} failed (`connect: ${env:URL}` is no URL
        # yet): their environments are refused when used, so here they stand as empty ones.
        waiting = {error["loc"][1] for error in errors}
        envs = {name: {} if name in waiting else env for name, env in data["envs"].items()}
        parsed = _ProjectFile.model_validate({**data, "envs": envs})
    envs = parsed.envs or {DEFAULT_ENV: _EnvironmentFile()}
    default = _default_env(doc, parsed.default_env, list(envs), problems)
    if default is None:
        return None
    root = root.resolve()
    project = Project(
        root=root,
        file=(root / PROJECT_FILE).resolve(),
        specs=(root / parsed.specs).resolve(),
        default_env=default,
        envs={name: _environment(name, env, parsed) for name, env in envs.items()},
        lint=parsed.lint,
        ignore=tuple(parsed.ignore),
    )
    # Kept only where an environment has a policy: a project without one reads exactly as before.
    places = {name: _policy_places(name, env, parsed) for name, env in envs.items()}
    project._policy_places = {name: found for name, found in places.items() if found}
    project._policy_lines = {
        place: doc.line(*place) for places in project._policy_places.values() for place in places.values()
    }
    return project


def _environment(name: str, env: _EnvironmentFile, project: _ProjectFile) -> Environment:
    settings = dict(env)
    for key in ("readers", "writers"):
        if settings[key] is None:
            settings[key] = getattr(project, key)
    settings["defaults"] = merged_defaults(project.defaults, env.defaults)
    # None stands for the default (spec), so that an environment written without it reads as before.
    settings["column_order"] = env.column_order or (None if project.column_order == "spec" else project.column_order)
    # Added, never replacing: an environment ignores what the whole project ignores, and its own tables besides.
    settings["ignore"] = list(dict.fromkeys([*project.ignore, *env.ignore]))
    # The policy: protections and rules added to the project's, limits key by key over them.
    settings["protect"] = [*project.protect, *env.protect]
    settings["rules"] = [*project.rules, *env.rules]
    settings["limits"] = {**project.limits, **env.limits}
    settings["safe_below"] = {**project.safe_below, **env.safe_below}
    return Environment(name=name, **settings)


def _policy_places(name: str, env: _EnvironmentFile, project: _ProjectFile) -> dict[tuple[Any, ...], tuple[Any, ...]]:
    """Where each entry of environment `name`'s merged policy is written (its place in the file)."""
    places: dict[tuple[Any, ...], tuple[Any, ...]] = {}
    for key in ("protect", "rules"):
        own = list(getattr(env, key))
        mine = list(getattr(project, key))
        for i in range(len(mine)):
            places[(key, i)] = (key, i)
        for i in range(len(own)):
            places[(key, len(mine) + i)] = ("envs", name, key, i)
    for key in ("limits", "safe_below"):
        for kind in getattr(project, key):
            places[(key, str(getattr(kind, "value", kind)))] = (key, str(getattr(kind, "value", kind)))
        for kind in getattr(env, key):
            places[(key, str(getattr(kind, "value", kind)))] = ("envs", name, key, str(getattr(kind, "value", kind)))
    return places


def merged_defaults(project: Mapping[str, str | None], env: Mapping[str, str | None]) -> dict[str, str | None]:
    """The environment's `defaults:` over the project's, key by key; keys compare case-insensitively, as
    Delta's `delta.*` keys do, and the environment's spelling wins."""
    merged = dict(project)
    for key, value in env.items():
        for same in [k for k in merged if k.lower() == key.lower()]:
            del merged[same]
        merged[key] = value
    return merged


def _waits_for_unset(error: ErrorDetails, unset: set[tuple[Any, ...]]) -> bool:
    loc = tuple(error["loc"])
    return any(loc[: len(where)] == where for where in unset)


def _default_env(doc: Doc, given: str | None, names: list[str], problems: list[SpecProblem]) -> str | None:
    if given is None and DEFAULT_ENV in names:
        return DEFAULT_ENV
    declared = ", ".join(names)
    if given is None:
        message = f"no `default_env:`, and no environment is called `{DEFAULT_ENV}`"
        problems.append(doc.problem(("envs",), message, f"add `default_env:` naming one of: {declared}"))
        return None
    if given not in names:
        close = difflib.get_close_matches(given, names, n=1)
        hint = (f"did you mean `{close[0]}`? " if close else "") + f"declared environments: {declared}"
        problems.append(doc.problem(("default_env",), f"default_env `{given}` is not an environment", hint))
        return None
    return given


def _reported_by_reader(error: ErrorDetails) -> bool:
    # The reader already reports keys YAML reads as non-text, with their YAML spelling.
    return error["type"] == "invalid_key" or (error["type"] == "string_type" and error["loc"][-1] == "[key]")


def _problem(doc: Doc, error: ErrorDetails) -> SpecProblem:
    """The spec reader's wording, with the keys looked up in the project file's models.

    spec_models.pydantic_problem looks unknown and missing keys up in the table spec's models, and cannot
    step through `envs:` (a mapping of models), so those kinds are worded here.
    """
    loc, kind = tuple(error["loc"]), error["type"]
    prefix = f"env `{loc[1]}`: " if len(loc) > 2 and loc[0] == "envs" else ""
    cause = (error.get("ctx") or {}).get("error")
    if isinstance(cause, _Conflict):
        later = max(cause.keys, key=lambda key: doc.line(*loc, key))
        return doc.problem((*loc, later), f"env `{loc[1]}`: {cause}", cause.hint)
    if isinstance(cause, _Located):
        env = f"env `{loc[1]}`: " if len(loc) >= 2 and loc[0] == "envs" else prefix
        return doc.problem((*loc, *cause.at), f"{env}{cause}", cause.hint)
    if kind == "missing":
        key, parent = loc[-1], loc[:-1]
        model = _model_at(parent)
        fields = _fields(model) if model else {}
        described = fields[str(key)].description if str(key) in fields else None
        hint = f"add `{key}:`" + (f" - {described}" if described else "")
        return doc.problem(parent, f"{prefix}missing required key `{key}` in `{_path(parent)}`", hint)
    if kind == "extra_forbidden":
        model = _model_at(loc[:-1])
        allowed = list(_fields(model)) if model else []
        close = difflib.get_close_matches(str(loc[-1]), allowed, n=1)
        hint = (f"did you mean `{close[0]}`? " if close else "") + "allowed keys: " + ", ".join(allowed)
        return doc.problem(loc, f"{prefix}unknown key `{loc[-1]}`", hint)
    if kind == "model_type":
        message = f"`{_path(loc)}` must be a mapping, got {kind_of(error['input'])}"
        return doc.problem(loc, message, "write `key: value` lines, or {} for the defaults")
    return pydantic_problem(doc, error)


def _path(loc: tuple[Any, ...]) -> str:
    return ".".join(str(step) for step in loc) or "the top level"


def _model_at(loc: tuple[Any, ...]) -> type[BaseModel] | None:
    """The model that the mapping at `loc` in the file is validated against."""
    annotation: Any = _ProjectFile
    for step in loc:
        annotation = _unwrap(annotation)
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            field_info = _fields(annotation).get(str(step))
            if field_info is None:
                return None
            annotation = field_info.annotation
        elif typing.get_origin(annotation) is dict:
            annotation = typing.get_args(annotation)[1]
        elif typing.get_origin(annotation) is list:
            annotation = typing.get_args(annotation)[0]
        else:
            return None
    annotation = _unwrap(annotation)
    return annotation if isinstance(annotation, type) and issubclass(annotation, BaseModel) else None


def _fields(model: type[BaseModel]) -> dict[str, FieldInfo]:
    """A model's fields by the key the file writes: its alias where it has one (`table-comment`)."""
    return {info.alias or name: info for name, info in model.model_fields.items()}


def _unwrap(annotation: Any) -> Any:
    """`X` for `X | None` and `Annotated[X, ...]`."""
    origin = typing.get_origin(annotation)
    if origin is Annotated:
        return _unwrap(typing.get_args(annotation)[0])
    if origin in (types.UnionType, typing.Union):
        options = [arg for arg in typing.get_args(annotation) if arg is not type(None)]
        return _unwrap(options[0]) if len(options) == 1 else annotation
    return annotation

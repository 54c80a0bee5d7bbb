"""The team's rules written in Python (`rules:` in delta-sync.yaml for plans, `lint: {rules: [...]}` for
specs): each named `package.module:function`, imported from the project's root, called with what it judges,
and returning findings with a severity. Whatever goes wrong in a rule (it cannot be imported, it raises, it
returns something else) is one sentence naming the rule, never a traceback: the rule is the team's code, the
message must tell them which one to fix.

A plan rule gets the reviewed plan as `delta_sync.planfile.schema.PlanDocument` (the content of
`plan --format json`, documented by `schemas/plan.schema.json`); a lint rule gets one spec as `SpecFile`.
Both return `RuleFinding`s (an iterable; None is taken as none).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from delta_sync.model.errors import DeltaSyncError

Severity = Literal["error", "warning"]


@dataclass(frozen=True, slots=True)
class RuleFinding:
    """What a rule found: `error` blocks the plan (exit 3) or fails lint (exit 3), `warning` is shown.

    For a plan rule, `table` names the table it is about (`schema.table`; None: the plan as a whole) and
    `file`/`line` the spec line it is at (else the table's first change's). For a lint rule, `at` is the key
    path in the spec it is about (`("columns", 2, "type")`), else `line`, else the file's first line."""

    severity: Severity
    message: str
    table: str | None = None
    file: str | None = None
    line: int | None = None
    at: tuple[str | int, ...] = field(default=())


@dataclass(frozen=True, slots=True)
class SpecFile:
    """One spec file as a lint rule sees it: its path as shown, its data (the environment's vars filled in)
    and whether it declares a table or a view."""

    file: str
    data: dict[str, Any]
    kind: Literal["table", "view"]


class RuleError(DeltaSyncError):
    """A rule of the team's that could not give findings: its import, its call, or what it returned."""


@contextmanager
def _importable_from(root: Path) -> Iterator[None]:
    added = str(root) not in sys.path
    if added:
        sys.path.insert(0, str(root))
    try:
        yield
    finally:
        if added and str(root) in sys.path:
            sys.path.remove(str(root))


def load(reference: str, root: Path, what: str = "rule") -> Callable[[Any], Any]:
    """The function `package.module:function`, imported with the project's root first on the path."""
    module_name, _, function_name = reference.partition(":")
    with _importable_from(root):
        try:
            module = importlib.import_module(module_name)
        except Exception as exc:  # the team's module: anything it raises on import is its problem
            raise RuleError(f"{what} {reference} cannot be imported: {_said(exc)}") from None
    function = getattr(module, function_name, None)
    if not callable(function):
        raise RuleError(f"{what} {reference}: module {module_name} has no function {function_name}")
    found: Callable[[Any], Any] = function
    return found


def call(reference: str, function: Callable[[Any], Any], argument: Any, what: str = "rule") -> list[RuleFinding]:
    """The rule's findings for `argument`, checked to be findings."""
    try:
        returned = function(argument)
        found = [] if returned is None else list(returned)
    except Exception as exc:  # the team's code: one sentence naming it, never its traceback
        raise RuleError(f"{what} {reference} raised {_said(exc)}") from None
    for item in found:
        if not isinstance(item, RuleFinding) or item.severity not in ("error", "warning"):
            raise RuleError(
                f"{what} {reference} returned {type(item).__name__} {item!r:.80}, not a RuleFinding with severity "
                "error or warning"
            )
    return found


def run(references: tuple[str, ...], root: Path, argument: Any, what: str = "rule") -> list[tuple[str, RuleFinding]]:
    """Every rule's findings, in the rules' order, each with the rule that found it."""
    found: list[tuple[str, RuleFinding]] = []
    for reference in references:
        function = load(reference, root, what)
        found.extend((reference, finding) for finding in call(reference, function, argument, what))
    return found


def _said(exc: BaseException) -> str:
    first = (str(exc).strip().splitlines() or [""])[0]
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__

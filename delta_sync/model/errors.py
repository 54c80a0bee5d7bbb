"""One error root; the CLI catches it at a single boundary and turns it into a message and an exit code."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


class DeltaSyncError(Exception):
    """Anything the user can act on. Other exceptions are bugs and keep their traceback."""

    exit_code = 1


@dataclass(frozen=True, slots=True)
class SpecProblem:
    file: str
    line: int
    message: str
    hint: str = ""

    def __str__(self) -> str:
        # Line 0: the problem is about the file as a whole (or one that does not exist), not one of its lines.
        text = f"{self.file}:{self.line}: {self.message}" if self.line > 0 else f"{self.file}: {self.message}"
        return f"{text} ({self.hint})" if self.hint else text


class SpecError(DeltaSyncError):
    """One or more problems in spec files, all reported together."""

    def __init__(self, problems: Sequence[SpecProblem]) -> None:
        self.problems = tuple(problems)
        count = len(self.problems)
        head = f"{count} problem{'s' if count != 1 else ''} in specs:"
        super().__init__("\n".join([head, *(f"  {p}" for p in self.problems)]))


class CatalogError(DeltaSyncError):
    """The catalog or the engine could not be reached or read."""


class SetupError(DeltaSyncError):
    """The local installation is missing something (Java, Delta jars, ...)."""


class UnsafePlanError(DeltaSyncError):
    """The plan contains changes that cannot be applied as they stand."""

    exit_code = 3


class ExecutionError(DeltaSyncError):
    """A statement failed during apply; carries what had already run."""

    def __init__(
        self,
        message: str,
        *,
        statement: str,
        index: int,
        applied: Sequence[str],
        conflict: bool = False,
        raced: bool = False,
    ) -> None:
        self.statement = statement
        self.index = index
        self.applied = tuple(applied)
        # Another writer committed first: the statement did not land and may be retried after a re-read.
        self.conflict = conflict
        # The engine says the statement's effect already exists: maybe another apply of the same specs.
        self.raced = raced
        super().__init__(message)

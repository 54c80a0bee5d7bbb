"""`delta-sync doctor`'s findings as values, and as the lines and JSON the command prints.

Each check is one line: ok, warning or failure, what was found, and the fix for anything not ok. The command
exits 1 when a check failed, else 0 (warnings included). Pure: the probes that find these are in
`delta_sync/spark/doctor_probes.py`, the order they run in is `delta_sync/review/doctor.py`'s."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any


class Status(StrEnum):
    OK = "ok"
    WARNING = "warning"
    FAILURE = "failure"


@dataclass(frozen=True, slots=True)
class Check:
    """One finding: `name` is stable (JSON, tests), `title` is what the line shows."""

    name: str
    title: str
    status: Status
    message: str
    fix: str = ""

    @property
    def line(self) -> str:
        """The check as the command prints it: `ok      Java: Java 17.0.15 (/usr/bin/java)`."""
        text = f"{self.status.value:<7} {self.title}: {_one_line(self.message)}"
        if self.fix and self.status != Status.OK:
            text += f" Fix: {_one_line(self.fix)}"
        return text

    def data(self) -> dict[str, str]:
        found = {"name": self.name, "title": self.title, "status": self.status.value, "message": self.message}
        if self.fix and self.status != Status.OK:
            found["fix"] = self.fix
        return found


def ok(name: str, title: str, message: str) -> Check:
    return Check(name, title, Status.OK, message)


def warning(name: str, title: str, message: str, fix: str = "") -> Check:
    return Check(name, title, Status.WARNING, message, fix)


def failure(name: str, title: str, message: str, fix: str = "") -> Check:
    return Check(name, title, Status.FAILURE, message, fix)


@dataclass(frozen=True, slots=True)
class Report:
    """Every check of one run, in the order they ran, for one environment."""

    environment: str
    checks: tuple[Check, ...]

    @property
    def failed(self) -> tuple[Check, ...]:
        return tuple(c for c in self.checks if c.status == Status.FAILURE)

    @property
    def exit_code(self) -> int:
        return 1 if self.failed else 0

    def counts(self) -> dict[Status, int]:
        return {status: sum(1 for c in self.checks if c.status == status) for status in Status}

    def summary(self) -> str:
        counts = self.counts()
        parts = [
            f"{counts[Status.OK]} ok",
            _plural(counts[Status.WARNING], "warning"),
            _plural(counts[Status.FAILURE], "failure"),
        ]
        return f"Environment {self.environment}: {', '.join(parts)}."

    def lines(self) -> list[str]:
        return [check.line for check in self.checks]

    def data(self) -> dict[str, Any]:
        counts = self.counts()
        return {
            "environment": self.environment,
            "ok": self.exit_code == 0,
            "counts": {status.value: counts[status] for status in Status},
            "checks": [check.data() for check in self.checks],
        }


def report(environment: str, checks: Iterable[Check]) -> Report:
    return Report(environment, tuple(checks))


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def _one_line(text: str) -> str:
    return " ".join(text.split())

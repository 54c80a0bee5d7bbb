"""Findings as GitHub workflow annotations (`--format github`): one `::error file=...,line=...::message` line
each, which GitHub shows on that line of the pull request's diff. What blocks a plan is an error, a stale
allow a warning; lint's findings keep their level. Paths are the repository's: `prefix` is the working
directory under the repository's root (the Action's `working-directory`), as spec lines are shown relative
to the working directory."""

from __future__ import annotations

import posixpath
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from delta_sync.model.state import Origin
from delta_sync.planning.hazards import Assessment
from delta_sync.planning.team_policy import stale_text

Level = Literal["error", "warning", "notice"]


@dataclass(frozen=True, slots=True)
class Annotation:
    level: Level
    title: str
    message: str
    file: str | None = None
    line: int | None = None


def _property(text: str) -> str:
    # GitHub's escaping of a workflow command's properties, which a file name or title could otherwise end.
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A").replace(":", "%3A").replace(",", "%2C")


def _data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def repository_path(file: str, prefix: str = "") -> str | None:
    """A spec's path as the repository names it; None for one outside it (absolute, or above the prefix)."""
    if file.startswith("/"):
        return None
    joined = posixpath.normpath(posixpath.join(prefix, file)) if prefix else posixpath.normpath(file)
    return None if joined.startswith("..") else joined


def command(annotation: Annotation, prefix: str = "") -> str:
    """One workflow command line."""
    found = repository_path(annotation.file, prefix) if annotation.file is not None else None
    properties = []
    if found is not None:
        properties.append(f"file={_property(found)}")
        if annotation.line:
            properties.append(f"line={annotation.line}")
    properties.append(f"title={_property(annotation.title)}")
    return f"::{annotation.level} {','.join(properties)}::{_data(annotation.message)}"


def _at(origin: Origin | None) -> tuple[str | None, int | None]:
    return (origin.file, origin.line) if origin is not None else (None, None)


def plan_annotations(assessment: Assessment) -> list[Annotation]:
    """What blocks the plan (errors, with the way out) and the stale allows (warnings), each at its spec line."""
    found = []
    for block in assessment.blocks:
        finding = block.finding
        title = f"delta-sync: {finding.hazard.value} ({finding.table})"
        found.append(Annotation("error", title, f"{block.why}; {block.unblock}", *_at(finding.origin)))
    for table, allow in assessment.stale_allows:
        found.append(Annotation("warning", f"delta-sync: stale allow ({table})", stale_text(allow), *_at(allow.origin)))
    return found


def lines(annotations: Iterable[Annotation], prefix: str = "") -> str:
    return "".join(f"{command(a, prefix)}\n" for a in annotations)

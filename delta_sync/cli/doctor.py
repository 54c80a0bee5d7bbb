"""`delta-sync doctor`: one line per check of what delta-sync needs (Java, pyspark and the Delta jars, Maven, the
buckets of object storage, the catalog, the class archive, the warm engine), and with `--write` what the catalog
accepts, on stdout; progress on stderr. Exit 0 when nothing failed, 1 otherwise."""

from __future__ import annotations

import json
from enum import StrEnum
from typing import Annotated

import typer
from rich.text import Text

from delta_sync.cli import console
from delta_sync.cli.console import _with_feedback
from delta_sync.cli.options import EnvOpt
from delta_sync.render.doctor import Report, Status

_STYLES = {Status.OK: "ds.ok", Status.WARNING: "ds.change", Status.FAILURE: "ds.blocked"}


class DoctorFormat(StrEnum):
    text = "text"
    json = "json"


def doctor(
    env: EnvOpt = None,
    write: Annotated[
        bool,
        typer.Option(
            "--write",
            help="Also try, in a scratch schema made for it and always dropped, what the catalog accepts that "
            "delta-sync relies on: CHECK constraints, column mapping, type widening, column defaults, SHALLOW "
            "CLONE, key constraints as DDL.",
        ),
    ] = False,
    format: Annotated[DoctorFormat, typer.Option("--format", "-f", help="Output format.")] = DoctorFormat.text,
) -> None:
    """Check what delta-sync needs here, one line per check: ok, warning or failure, with the fix.

    It checks Java, pyspark and delta-spark against the Delta jars, the jars cache, Maven, the S3 buckets of the
    warehouse and of the specs' locations (and the connectors ADLS and GCS need), the environment's catalog, the
    class archive and the warm engine.

    Exit codes:
    0  nothing failed (warnings allowed)
    1  a check failed

    Example:
    $ delta-sync doctor --env prod --write
    """
    from delta_sync.review.doctor import diagnose

    found: Report = _with_feedback(lambda progress: diagnose(env, write, progress))
    if format is DoctorFormat.json:
        console.out.print_json(json.dumps(found.data()))
    else:
        for check in found.checks:
            line = Text(f"{check.status.value:<7} ", style=_STYLES[check.status])
            line.append(check.line.split(" ", 1)[1].lstrip())
            console.out.print(line)
        summary = found.summary()
        console.err.print(Text(summary, style=_STYLES[Status.FAILURE if found.failed else Status.OK]))
    raise typer.Exit(found.exit_code)

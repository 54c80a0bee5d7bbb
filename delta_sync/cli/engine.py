"""`delta-sync engine`: the status of the warm engine that keeps Spark running for the local catalog,
and stopping it."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer
from rich.text import Text

from delta_sync.cli import console
from delta_sync.cli.console import _fail, _guard
from delta_sync.cli.help import Command
from delta_sync.cli.options import EnvOpt, SqlFormat, _Commands, _env
from delta_sync.model.errors import DeltaSyncError

engine_app = typer.Typer(
    cls=_Commands,
    help="""The warm engine that keeps Spark running for the local catalog.

    A background process, so that commands after the first start in about a second. It stops after 10 minutes idle
    (DELTA_SYNC_ENGINE_IDLE).

    Example:
    $ delta-sync engine status
    """,
    no_args_is_help=True,
)


def _engine_home(env: str | None) -> Path:
    from delta_sync.review.environments import env_home

    project, environment = _env(env)
    if environment.connect:
        _fail(DeltaSyncError(f"Environment {environment.name} uses Spark Connect: it has no engine of delta-sync's."))
    return env_home(project, environment)


@engine_app.command("status", cls=Command)
def engine_status(
    env: EnvOpt = None,
    format: Annotated[SqlFormat, typer.Option(help="Output format (table = text).")] = SqlFormat.table,
) -> None:
    """Whether an engine runs for the environment's catalog, since when, and what it is running.

    Exit codes:
    0  shown, whether an engine runs or not
    1  an error

    Example:
    $ delta-sync engine status --format json
    """
    from delta_sync.spark import engine_control

    home = _engine_home(env)
    found = engine_control.engine_status(home)
    if format == SqlFormat.json:
        console.out.print_json(data={"running": found is not None, "home": str(home), **(found or {})})
        return
    if found is None:
        console.out.print(Text(f"No engine is running for {home}."))
        return
    started = time.strftime("%H:%M:%S", time.localtime(found["started"]))
    lines = Text(
        f"Engine running for {home}: pid {found['pid']} (JVM {found['jvm_pid']}), version {found['version']}\n"
    )
    lines.append(f"  started {started}, {found['served']} command(s) served")
    if found["stopping"]:
        lines.append(", stopping once the commands running end")
    elif not found["commands"] and not found.get("awaiting"):
        lines.append(f", idle {found['idle_for']:.0f}s (stops after {found['idle_timeout']:.0f}s idle)")
    for running in found["commands"]:
        lines.append(f"\n  running ({running['seconds']:.0f}s): {running['command']} (pid {running['pid']})")
    for dead in found.get("awaiting", []):
        died = time.strftime("%H:%M:%S", time.localtime(dead["died"]))
        lines.append(f"\n  awaiting what {dead['command']} (pid {dead['pid']}, died {died}) had in flight, to land")
        lines.append(" in full or not at all:")
        for statement in dead["statements"]:
            since = time.strftime("%H:%M:%S", time.localtime(statement["since"]))
            lines.append(f"\n    since {since} ({statement['seconds']:.0f}s): {statement['sql']}")
    console.out.print(lines)


@engine_app.command("stop", cls=Command)
def engine_stop(env: EnvOpt = None) -> None:
    """Stop the engine once the commands it runs end; the next command starts Spark again.

    Exit codes:
    0  stopped, or none was running
    1  an error

    Example:
    $ delta-sync engine stop
    """
    from delta_sync.spark import engine_control

    home = _engine_home(env)

    def waiting(running: int) -> None:
        console.err.print(Text(f"Waiting for {running} running command(s) to end...", style="ds.muted"))

    stopped = _guard(lambda: engine_control.stop_engine(home, waiting))
    console.out.print(
        Text(f"No engine was running for {home}." if stopped is None else f"Stopped the engine (pid {stopped.pid}).")
    )

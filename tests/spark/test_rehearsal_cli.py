"""`plan --rehearse` and `apply --rehearse` through the CLI, on the embedded catalog: exit codes, JSON,
the source tables' files untouched by a rehearsal that is refused, SIGKILLed or interrupted (Ctrl-C),
and the clones a killed one left dropped by the next one.

Both ways a user's commands go (tests/spark/cli.py), one after the other on the same tables: through the warm
engine up to the kills, which run in-process, as on CI (Ctrl-C in a command the engine serves is issue 39's).
"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

from delta_sync.planning import rehearsal
from tests.spark.cli import ENGINE, IN_PROCESS, Cli

V1 = {
    "a.yaml": "table: r.a\ncolumns:\n  - name: id\n    type: bigint\n  - name: v\n    type: string\n",
    "b.yaml": "table: r.b\ncolumns:\n  - name: id\n    type: bigint\n",
}
BAD = {
    "a.yaml": V1["a.yaml"] + "properties:\n  delta.deletedFileRetentionDuration: one week\n",
    "b.yaml": V1["b.yaml"] + "  - name: n\n    type: int\nchecks:\n  id_pos: id > 0\n",
}
GOOD = {**BAD, "a.yaml": V1["a.yaml"] + "properties:\n  delta.deletedFileRetentionDuration: interval 8 days\n"}
MORE = {
    "a.yaml": GOOD["a.yaml"] + "checks:\n  v_set: v IS NULL OR v <> ''\ncomment: A\n",
    "b.yaml": GOOD["b.yaml"] + "  n_pos: n IS NULL OR n >= 0\ncomment: B\n",
}


def write(specs: Path, files: dict[str, str]) -> None:
    specs.mkdir(exist_ok=True)
    for name, text in files.items():
        (specs / name).write_text(text)


def tables(root: Path) -> dict[str, list[tuple[str, int]]]:
    """Every table folder of the embedded warehouse, with its files (log included) and their sizes."""
    found = {}
    for log in sorted(root.glob(".delta-sync/**/_delta_log")):
        folder = log.parent
        found[f"{folder.parent.name}/{folder.name}"] = sorted(
            (str(p.relative_to(folder)), p.stat().st_size) for p in folder.rglob("*") if p.is_file()
        )
    return found


def sources(root: Path) -> dict[str, list[tuple[str, int]]]:
    return {k: v for k, v in tables(root).items() if k.startswith("r.db/")}


def clones_left(root: Path) -> list[str]:
    return [k for k in tables(root) if rehearsal.MARKER in k]


def stop_while_rehearsing(cli: Cli, args: list[str], how: signal.Signals, at: str) -> int:
    """Run `args` and send `how` to it once its log shows `at`; its exit code."""
    process = cli.start(args)
    assert process.stderr is not None
    for line in process.stderr:
        if at in line:
            if how is signal.SIGKILL:
                os.killpg(process.pid, how)
            else:
                process.send_signal(how)  # Ctrl-C reaches the CLI process, as at a terminal
            break
    return process.wait(timeout=600)


def test_rehearse_blocks_applies_and_survives_kills(tmp_path: Path) -> None:
    cli = Cli(tmp_path, ENGINE)
    try:
        _rehearsals(cli)
    finally:
        cli.close()


def _rehearsals(cli: Cli) -> None:
    run, tmp_path = cli.run, cli.root
    specs = tmp_path / "specs"
    write(specs, V1)
    assert run(["apply", "specs", "--yes"]).returncode == 0
    for table in ("a", "b"):
        assert run(["sql", f"INSERT INTO r.{table} (id) VALUES (1), (2)"]).returncode == 0
    before = sources(tmp_path)
    assert sorted(before) == ["r.db/a", "r.db/b"]

    # A property value Delta refuses: blocked by the rehearsal (exit 3), nothing changed.
    write(specs, BAD)
    refused = run(["plan", "specs", "--rehearse", "--format", "json"])
    assert refused.returncode == 3, refused.stderr
    document = json.loads(refused.stdout)
    outcomes = {r["table"]: r["outcome"] for r in document["rehearsals"]}
    assert outcomes == {"r.a": "failed", "r.b": "passed"}
    (failed,) = [r for r in document["rehearsals"] if r["outcome"] == "failed"]
    assert failed["error_class"] == "DELTA_INVALID_INTERVAL"
    assert "one week" in failed["statement"]
    hazards = [h for a in document["actions"] for h in a.get("hazards", ()) if h["class"] == "rehearsal"]
    assert len(hazards) == 1
    assert hazards[0]["blocked"]
    assert hazards[0]["origin"]["file"].endswith("a.yaml")
    assert sources(tmp_path) == before
    assert clones_left(tmp_path) == []

    # Without --rehearse the same plan is as it always was: nothing known to fail.
    plain = run(["plan", "specs", "--detailed-exitcode"])
    assert plain.returncode == 2, plain.stdout + plain.stderr
    assert "rehearsal" not in plain.stdout

    # Fixed, `apply --rehearse` rehearses (text shows it) and then applies; the re-plan is empty.
    write(specs, GOOD)
    applied = run(["apply", "specs", "--rehearse", "--yes"])
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert "# rehearsal: passed on a shallow clone" in applied.stdout
    assert run(["plan", "specs", "--detailed-exitcode"]).returncode == 0
    before = sources(tmp_path)

    # SIGKILL mid-rehearsal: the sources are untouched; the next rehearsal drops what the kill left.
    cli.use(IN_PROCESS)
    write(specs, MORE)
    # Once one table is done: the other's clone is most likely in flight (either way, nothing may be left).
    stop_while_rehearsing(cli, ["plan", "specs", "--rehearse"], signal.SIGKILL, "Rehearsed 1/")
    assert sources(tmp_path) == before
    again = run(["plan", "specs", "--rehearse", "--detailed-exitcode"])
    assert again.returncode == 2, again.stdout + again.stderr
    assert again.stdout.count("# rehearsal: passed") == 2
    assert clones_left(tmp_path) == []
    assert sources(tmp_path) == before

    # Ctrl-C mid-rehearsal: exit 130, the clones in flight dropped, the sources untouched.
    # As the rehearsal starts (each table's takes seconds), so that Ctrl-C lands inside it.
    assert stop_while_rehearsing(cli, ["plan", "specs", "--rehearse"], signal.SIGINT, "Rehearsing ") == 130
    assert clones_left(tmp_path) == []
    assert sources(tmp_path) == before
    cleaned = run(["rehearsal", "clean", "specs"])
    assert cleaned.returncode == 0, cleaned.stderr
    assert "0 leftover clone(s) dropped" in cleaned.stderr

"""Fair sharing in the warm engine: a small command's time while another command's long query runs through the
same engine, against the same on an idle engine. Ratios side by side, in one run.

    python bench/engine_fairness.py [--reps 3] [--settle 3] [--long SQL ...] [--fifo] [--out FILE.json]

In a fresh temporary project holding the README's example (`specs/`, applied first), through the warm engine as at a
terminal (CI, DELTA_SYNC_NO_ENGINE and DELTA_SYNC_HOME removed from the children's environment). The delta_sync the
commands run is the one this Python imports: put a copy of the tree first on PYTHONPATH to measure it while others
edit the work tree (the engine's code fingerprint covers its source files: an edit would restart it mid-run).

Each repetition, taking turns: on the idle engine, `sql "SELECT sum(hash(id)) FROM range(0, 4000, 1, 4)"` (the
small query) and a warm `plan specs --detailed-exitcode` of the example (no changes: exit 0); then, for each long
query (--long, by default the issue's 8 long tasks and the same rows in 4,000 short ones), that query is started
with `delta-sync sql`, and once its job runs and --settle seconds have passed (its tasks hold every core) the two
small commands run again; the long query is then interrupted (Ctrl-C: its jobs are cancelled) and the engine
waited for until no job runs. The ratio is the loaded median over the idle median (goal <= 2x).

--fifo runs the same again (the first long query only, --fifo-reps times) on an engine whose environment sets
`spark.scheduler.mode: FIFO` (as before issue 47): the baseline, slow by design (the small commands wait until
every task of the long stage has started).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
SMALL = "SELECT sum(hash(id)) FROM range(0, 4000, 1, 4)"
LONG = (
    "SELECT sum(hash(id)) FROM range(0, 40000000000, 1, 8)",  # the issue's: 8 tasks of a minute or more each
    "SELECT sum(hash(id)) FROM range(0, 40000000000, 1, 4000)",  # the same rows in tasks of ~0.2 s
)
GOAL = 2.0
PROJECT = "default_env: fair\nenvs:\n  fair: {}\n  fifo:\n    spark:\n      conf:\n        spark.scheduler.mode: FIFO\n"


def environ(env: str) -> dict[str, str]:
    dropped = ("CI", "DELTA_SYNC_NO_ENGINE", "DELTA_SYNC_HOME", "DELTA_SYNC_ENGINE")
    found = {k: v for k, v in os.environ.items() if k not in dropped}
    return found | {"NO_COLOR": "1", "DELTA_SYNC_ENGINE_IDLE": "900"}


def command(args: list[str], env: str) -> list[str]:
    return [PY, "-m", "delta_sync", *args, "--env", env]


def timed(args: list[str], root: Path, env: str, expect: int = 0) -> float:
    started = time.perf_counter()
    done = subprocess.run(command(args, env), cwd=root, env=environ(env), capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - started
    if done.returncode != expect:
        raise SystemExit(
            f"{args} exited {done.returncode}, expected {expect}:\n{done.stdout[-2000:]}{done.stderr[-2000:]}"
        )
    return elapsed


def status(root: Path, env: str) -> dict[str, Any]:
    done = subprocess.run(
        command(["engine", "status", "--format", "json"], env),
        cwd=root,
        env=environ(env),
        capture_output=True,
        text=True,
    )
    found: dict[str, Any] = json.loads(done.stdout)
    return found


def active_jobs(root: Path, env: str) -> int:
    return int(status(root, env).get("memory", {}).get("active_jobs", 0))


def wait_for(check: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out waiting for {what}")
        time.sleep(0.3)


def small_commands(root: Path, env: str) -> dict[str, float]:
    return {
        "small_query": timed(["sql", SMALL], root, env),
        "warm_plan": timed(["plan", "specs", "--detailed-exitcode"], root, env),
    }


def loaded(root: Path, env: str, long: str, settle: float) -> dict[str, float]:
    runner = subprocess.Popen(
        command(["sql", long], env),
        cwd=root,
        env=environ(env),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        wait_for(lambda: active_jobs(root, env) >= 1, 120, "the long query's job")
        time.sleep(settle)
        times = small_commands(root, env)
        if runner.poll() is not None:
            raise SystemExit(
                f"the long query ended ({runner.returncode}) before the small commands did: make it longer"
            )
        return times
    finally:
        if runner.poll() is None:
            os.killpg(runner.pid, signal.SIGINT)  # Ctrl-C: the engine cancels its jobs
        runner.wait(timeout=120)
        wait_for(lambda: active_jobs(root, env) == 0, 300, "the long query's jobs to be cancelled")


def measure(root: Path, env: str, longs: list[str], reps: int, settle: float) -> dict[str, Any]:
    timed(["apply", "specs", "--yes"], root, env)  # starts this environment's engine
    timed(["plan", "specs", "--detailed-exitcode"], root, env)  # warms its caches
    idle: dict[str, list[float]] = {"small_query": [], "warm_plan": []}
    under: dict[str, dict[str, list[float]]] = {long: {"small_query": [], "warm_plan": []} for long in longs}
    try:
        for rep in range(reps):
            for name, value in small_commands(root, env).items():
                idle[name].append(value)
            for long in longs:
                for name, value in loaded(root, env, long, settle).items():
                    under[long][name].append(value)
            print(f"{env} rep {rep + 1}/{reps}: idle {idle}, loaded {under}", file=sys.stderr, flush=True)
    finally:
        subprocess.run(command(["engine", "stop"], env), cwd=root, env=environ(env), capture_output=True, check=False)
    result: dict[str, Any] = {"idle": {k: summary(v) for k, v in idle.items()}, "loaded": {}}
    for long, times in under.items():
        result["loaded"][long] = {
            name: {**summary(values), "ratio": round(statistics.median(values) / statistics.median(idle[name]), 2)}
            for name, values in times.items()
        }
    return result


def summary(values: list[float]) -> dict[str, Any]:
    return {"median": round(statistics.median(values), 3), "times": [round(v, 3) for v in values]}


def report(results: dict[str, Any]) -> None:
    print(f"\n{'engine':6} {'while':62} {'command':12} {'idle':>8} {'loaded':>8} {'ratio':>7}  goal <= {GOAL}x")
    for env, found in results["modes"].items():
        for long, commands in found["loaded"].items():
            for name, figures in commands.items():
                idle = found["idle"][name]["median"]
                met = "met" if figures["ratio"] <= GOAL else "missed"
                print(
                    f"{env:6} {long[:62]:62} {name:12} {idle:7.2f}s {figures['median']:7.2f}s "
                    f"{figures['ratio']:6.1f}x  {met if env == 'fair' else ''}"
                )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--settle", type=float, default=3.0, help="seconds between the long job's start and the rest")
    parser.add_argument("--long", action="append", help="a long query (repeatable; default: the two of LONG)")
    parser.add_argument("--fifo", action="store_true", help="also on a FIFO engine, the baseline (slow)")
    parser.add_argument("--fifo-reps", type=int, default=1)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--keep", action="store_true", help="keep the temporary project")
    args = parser.parse_args()
    import delta_sync

    longs = args.long or list(LONG)
    work = Path(tempfile.mkdtemp(prefix="delta-sync-fairness-"))
    results: dict[str, Any] = {
        "args": {k: str(v) for k, v in vars(args).items()},
        "cores": os.cpu_count(),
        "loadavg_start": os.getloadavg(),
        "delta_sync": str(Path(delta_sync.__file__).parent),
        "small_query": SMALL,
        "modes": {},
    }
    try:
        shutil.copytree(ROOT / "specs", work / "specs")
        (work / "delta-sync.yaml").write_text(PROJECT)
        results["modes"]["fair"] = measure(work, "fair", longs, args.reps, args.settle)
        if args.fifo:
            results["modes"]["fifo"] = measure(work, "fifo", longs[:1], args.fifo_reps, args.settle)
    finally:
        results["loadavg_end"] = os.getloadavg()
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    report(results)
    if args.out:
        args.out.write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()

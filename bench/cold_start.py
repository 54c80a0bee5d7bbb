"""A cold, in-process `plan` of the README's example, side by side: a baseline copy of delta_sync against this one.

python bench/cold_start.py --baseline /tmp/base [--current .] [--reps 5] [--current-java-options "-XX:..."]

The baseline is a copy of the package made before a change (`cp -r delta_sync /tmp/base/`); each side runs with
PYTHONPATH at its tree. One temporary project holds the repository's `specs/`, applied once (`apply --yes`), then
each repetition runs `CI=true python -m delta_sync plan specs/` once per side, the order alternating, so that a
change in the machine's load falls on both alike. Each run is measured as wall time and as CPU time (user + sys of
the whole process tree: Python, spark-submit's launcher JVM and Spark's JVM, all reaped below the child), which a
loaded machine inflates much less than wall time. Prints JSON: per side the runs and their medians, and the
current/baseline ratio of the medians.

`--current-java-options` / `--baseline-java-options` put JAVA_TOOL_OPTIONS on one side only: a JVM flag tried
before it is written into the product, or one change's share told apart from the others'.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def run(tree: Path, project: Path, args: list[str], extra_env: dict[str, str]) -> dict[str, Any]:
    env = {**os.environ, "CI": "true", "PYTHONPATH": str(tree), **extra_env}
    env.pop("DELTA_SYNC_HOME", None)
    started = time.perf_counter()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        child = subprocess.Popen(
            [sys.executable, "-m", "delta_sync", *args], cwd=project, env=env, stdout=out, stderr=err
        )
        _, status, usage = os.wait4(child.pid, 0)
        child.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - started
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode(errors="replace"), err.read().decode(errors="replace")
    if child.returncode != 0:
        raise SystemExit(f"{' '.join(args)} with {tree} exited {child.returncode}:\n{stdout}\n{stderr[-3000:]}")
    return {
        "wall": round(wall, 3),
        "cpu": round(usage.ru_utime + usage.ru_stime, 3),
        "load": round(os.getloadavg()[0], 2),
        "stdout": stdout,
    }


def summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "wall_median": round(statistics.median(r["wall"] for r in runs), 3),
        "cpu_median": round(statistics.median(r["cpu"] for r in runs), 3),
        "runs": [{k: r[k] for k in ("wall", "cpu", "load")} for r in runs],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--baseline", type=Path, required=True, help="folder holding the baseline's delta_sync/")
    parser.add_argument("--current", type=Path, default=ROOT, help="folder holding the changed delta_sync/")
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--current-java-options", default="", help="JAVA_TOOL_OPTIONS for the current side only")
    parser.add_argument("--baseline-java-options", default="", help="JAVA_TOOL_OPTIONS for the baseline only")
    parser.add_argument("--keep", action="store_true", help="keep the temporary project")
    parser.add_argument("--project", type=Path, help="an existing project whose specs/ were applied (none made)")
    options = parser.parse_args()
    sides = {"baseline": options.baseline.resolve(), "current": options.current.resolve()}
    extra: dict[str, dict[str, str]] = {"baseline": {}, "current": {}}
    if options.current_java_options:
        extra["current"]["JAVA_TOOL_OPTIONS"] = options.current_java_options
    if options.baseline_java_options:
        extra["baseline"]["JAVA_TOOL_OPTIONS"] = options.baseline_java_options
    project = options.project.resolve() if options.project else Path(tempfile.mkdtemp(prefix="cold-start-"))
    try:
        if options.project is None:
            shutil.copytree(ROOT / "specs", project / "specs")
            # The catalog is made (Derby's schema created) by the current tree: later runs of both sides read it.
            run(sides["current"], project, ["apply", "--yes", "specs/"], {})
        results: dict[str, list[dict[str, Any]]] = {"baseline": [], "current": []}
        outputs: dict[str, set[str]] = {"baseline": set(), "current": set()}
        for rep in range(options.reps):
            order = ["baseline", "current"] if rep % 2 == 0 else ["current", "baseline"]
            for side in order:
                measured = run(sides[side], project, ["plan", "specs/"], extra[side])
                outputs[side].add(measured.pop("stdout"))
                results[side].append(measured)
                print(f"rep {rep + 1} {side}: {measured}", file=sys.stderr)
        report: dict[str, Any] = {side: summary(runs) for side, runs in results.items()}
        base, cur = report["baseline"], report["current"]
        report["ratio"] = {
            "wall": round(cur["wall_median"] / base["wall_median"], 3),
            "cpu": round(cur["cpu_median"] / base["cpu_median"], 3),
        }
        # Per repetition, each pair ran back to back: the median of their ratios is the least load-sensitive.
        report["ratio_of_pairs"] = {
            key: round(
                statistics.median(
                    c[key] / b[key] for b, c in zip(results["baseline"], results["current"], strict=True)
                ),
                3,
            )
            for key in ("wall", "cpu")
        }
        report["same_plan"] = outputs["baseline"] == outputs["current"]
        report["java_options"] = {"baseline": options.baseline_java_options, "current": options.current_java_options}
        print(json.dumps(report, indent=2))
    finally:
        if options.keep or options.project:
            print(f"project kept in {project}", file=sys.stderr)
        else:
            shutil.rmtree(project, ignore_errors=True)


if __name__ == "__main__":
    main()

"""delta-sync vs hand-written baselines, side by side in one run: plan, apply, validate, probe, keys, growth.

python bench/run.py --tables 50 [--reps 3] [--rows 2000000] [--growth 1000] [--out bench/results.json]

Every repetition of plan, apply and validate is its own process (Spark's start included), delta-sync and
its baseline taking turns on the same estate; the probe is timed inside one warm session. Everything runs
in a temporary folder (DELTA_SYNC_HOME points there), never in the project's .delta-sync/.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from estate import TableDef, estate, migration_sql, write_specs
from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
PY = sys.executable
# ratio = delta-sync / baseline; at most this to pass.
TARGETS = {"plan": 0.5, "apply": 1.1, "validate": 2.0, "probe": 1.3, "import": 1.0, "keys": 1.1}
YAML_LOAD = (
    "import glob, sys, yaml; "
    "docs = [yaml.safe_load(open(f)) for f in glob.glob(sys.argv[1] + '/**/*.yaml', recursive=True)]; "
    "print(len(docs), 'files')"
)
# For reference: the same with libyaml's C loader, which delta-sync itself uses.
YAML_C_LOAD = YAML_LOAD.replace("yaml.safe_load(open(f))", "yaml.load(open(f), Loader=yaml.CSafeLoader)")
console = Console(width=110)


class Bench:
    def __init__(self, work: Path, reps: int) -> None:
        self.work = work
        self.reps = reps
        self.home = work / "estate"
        self.snapshot = work / "estate.snapshot"
        self.log = work / "bench.log"

    def run(
        self,
        command: Sequence[str],
        home: Path | None = None,
        expect: int = 0,
        engine: bool = False,
        *,
        ci: bool = False,
        extra: Mapping[str, str] | None = None,
        cwd: Path | None = None,
    ) -> tuple[float, str]:
        """Wall time of one process, interpreter and Spark start included (unless `engine`: the warm
        engine's, started before the repetitions). In-process by DELTA_SYNC_NO_ENGINE=1, or by CI=true as on
        CI (`ci`); `extra` adds to the environment (DELTA_SYNC_READER is passed only through it)."""
        dropped = ("CI", "DELTA_SYNC_NO_ENGINE", "DELTA_SYNC_READER")
        env = {k: v for k, v in os.environ.items() if k not in dropped}
        if engine:
            env |= {"NO_COLOR": "1"}
        else:
            env |= {"NO_COLOR": "1", "CI": "true"} if ci else {"NO_COLOR": "1", "DELTA_SYNC_NO_ENGINE": "1"}
        env |= extra or {}
        if home is not None:
            env["DELTA_SYNC_HOME"] = str(home)
        started = time.perf_counter()
        done = subprocess.run(command, cwd=cwd or self.work, env=env, capture_output=True, text=True, check=False)
        elapsed = time.perf_counter() - started
        with self.log.open("a") as log:
            log.write(f"$ {' '.join(command)}  [{elapsed:.2f}s rc={done.returncode}]\n{done.stdout[-3000:]}\n")
            log.write(done.stderr[-3000:] + "\n")
        if done.returncode != expect:
            tail = (done.stdout + done.stderr).strip().splitlines()[-15:]
            raise SystemExit(f"{' '.join(command)} exited {done.returncode}, expected {expect}:\n" + "\n".join(tail))
        return elapsed, done.stdout

    def worker(self, *args: str) -> Any:
        _elapsed, out = self.run([PY, str(BENCH / "worker.py"), *args])
        line = next(line for line in reversed(out.splitlines()) if line.startswith("RESULT "))
        return json.loads(line[len("RESULT ") :])

    def restore(self) -> None:
        """Back to the estate as built (same absolute path, so the metastore's table locations still hold)."""
        shutil.rmtree(self.home)
        shutil.copytree(self.snapshot, self.home)

    def pair(
        self, name: str, ours: Callable[[], float], theirs: Callable[[], float], **more: Callable[[], float]
    ) -> dict[str, Any]:
        """Each side `reps` times, taking turns (alternating who goes first) so load hits all alike."""
        sides = [("delta_sync", ours), ("baseline", theirs), *more.items()]
        times: dict[str, list[float]] = {side: [] for side, _measure in sides}
        for rep in range(self.reps):
            for side, measure in sides if rep % 2 == 0 else reversed(sides):
                times[side].append(measure())
                console.log(f"{name} rep {rep + 1}/{self.reps} {side}: {times[side][-1]:.2f}s")
        return summarize(times, TARGETS.get(name))


def summarize(times: dict[str, list[float]], target: float | None) -> dict[str, Any]:
    medians = {side: statistics.median(values) for side, values in times.items()}
    ratio = medians["delta_sync"] / medians["baseline"]
    result: dict[str, Any] = {"raw_s": times, "median_s": medians, "ratio": ratio}
    if target is not None:
        result |= {"target": target, "pass": ratio <= target}
    return result


def names_file(path: Path, tables: list[TableDef]) -> Path:
    path.write_text("".join(f"{t.name}\n" for t in tables))
    return path


def bench_plan(bench: Bench, tables: list[TableDef]) -> dict[str, Any]:
    specs = write_specs(bench.work / f"specs_{len(tables)}", tables)
    listing = names_file(bench.work / f"tables_{len(tables)}.txt", tables)
    # --detailed-exitcode: 0 proves the estate is unchanged (a plan with changes would exit 2).
    ours = [PY, "-m", "delta_sync", "plan", str(specs), "--detailed-exitcode"]
    theirs = [PY, str(BENCH / "baseline_read.py"), str(bench.home), str(listing)]
    result = bench.pair("plan", lambda: bench.run(ours, bench.home)[0], lambda: bench.run(theirs, bench.home)[0])
    return result | {"tables": len(tables)}


def bench_growth(bench: Bench, tables: list[TableDef], sizes: list[int]) -> dict[str, Any]:
    """`plan` on the first 50, 200, ... tables of one estate; sizes take turns so load drift hits all alike."""
    commands = {
        size: [
            PY,
            "-m",
            "delta_sync",
            "plan",
            str(write_specs(bench.work / f"specs_{size}", tables[:size])),
            "--detailed-exitcode",
        ]
        for size in sizes
    }
    raw: dict[int, list[float]] = {size: [] for size in sizes}
    for rep in range(bench.reps):
        for size in sizes if rep % 2 == 0 else reversed(sizes):
            raw[size].append(bench.run(commands[size], bench.home)[0])
            console.log(f"growth rep {rep + 1}/{bench.reps} {size} tables: {raw[size][-1]:.2f}s")
    medians = {size: statistics.median(values) for size, values in raw.items()}
    xs, ys = list(medians), list(medians.values())
    slope, intercept = statistics.linear_regression(xs, ys) if len(xs) > 1 else (float("nan"), float("nan"))
    return {
        "median_s": {str(k): v for k, v in medians.items()},
        "raw_s": {str(k): v for k, v in raw.items()},
        "per_table_s": slope,
        "fixed_s": intercept,
        "per_table_between_sizes_s": [(ys[i + 1] - ys[i]) / (xs[i + 1] - xs[i]) for i in range(len(xs) - 1)],
    }


def commits(before: dict[str, list[list[Any]]], after: dict[str, list[list[Any]]]) -> dict[str, Any]:
    added = {name: [op for version, op in after[name] if version > before[name][0][0]] for name in after}
    counts = sorted(len(ops) for ops in added.values())
    first = sorted(added)[0]
    return {
        "per_table_min": counts[0],
        "per_table_max": counts[-1],
        "total": sum(counts),
        "example": {first: list(reversed(added[first]))},
    }


def bench_apply(bench: Bench, tables: list[TableDef]) -> dict[str, Any]:
    specs = write_specs(bench.work / "specs_migrated", tables, migrate=True)
    listing = names_file(bench.work / "tables_apply.txt", tables)
    sql = bench.work / "migration.sql"
    sql.write_text("".join(f"{s}\n" for t in tables for s in migration_sql(t)))
    ours = [PY, "-m", "delta_sync", "apply", str(specs), "--yes"]
    theirs = [PY, str(BENCH / "baseline_apply.py"), str(bench.home), str(sql)]
    before = bench.worker("history", str(bench.home), str(listing))
    history: dict[str, Any] = {}

    def measure(side: str, command: list[str]) -> float:
        bench.restore()
        elapsed = bench.run(command, bench.home)[0]
        if side not in history:
            history[side] = commits(before, bench.worker("history", str(bench.home), str(listing)))
            # The hand-written statements must reach exactly the migrated specs: a plan then has nothing to do.
            bench.run([PY, "-m", "delta_sync", "plan", str(specs), "--detailed-exitcode"], bench.home)
        return elapsed

    # Also one statement at a time, as the baseline runs them: what the checks and the re-read cost alone.
    serial = [*ours, "--parallel", "1"]
    result = bench.pair(
        "apply",
        lambda: measure("delta_sync", ours),
        lambda: measure("baseline", theirs),
        delta_sync_parallel_1=lambda: measure("delta_sync_parallel_1", serial),
    )
    bench.restore()
    ours_commits, their_commits = history["delta_sync"]["total"], history["baseline"]["total"]
    assert history["delta_sync_parallel_1"]["total"] == ours_commits
    return result | {
        "tables": len(tables),
        "commits": history,
        "commits_pass": ours_commits <= their_commits,
        "baseline_statements": migration_sql(tables[0]),
    }


def bench_rehearse(bench: Bench, tables: list[TableDef]) -> dict[str, Any]:
    """`plan --rehearse` of the migration `apply` measures, against `plan` of it and against the same work by
    hand (read the tables, then clone + the statements + drop per table, in one PySpark script)."""
    specs = write_specs(bench.work / "specs_migrated", tables, migrate=True)
    listing = names_file(bench.work / "tables_rehearse.txt", tables)
    sql = bench.work / "migration.sql"
    sql.write_text("".join(f"{s}\n" for t in tables for s in migration_sql(t)))
    rehearse = [PY, "-m", "delta_sync", "plan", str(specs), "--rehearse", "--detailed-exitcode"]
    plain = [PY, "-m", "delta_sync", "plan", str(specs), "--detailed-exitcode"]
    theirs = [PY, str(BENCH / "baseline_rehearse.py"), str(bench.home), str(listing), str(sql)]
    by_hand: list[float] = []

    def hand() -> float:
        elapsed, out = bench.run(theirs, bench.home)
        by_hand.append(float(out.split("rehearsal_s ")[1].split()[0]))
        return elapsed

    result = bench.pair(
        "rehearse",
        lambda: bench.run(rehearse, bench.home, expect=2)[0],
        hand,
        delta_sync_plan=lambda: bench.run(plain, bench.home, expect=2)[0],
    )
    added = result["median_s"]["delta_sync"] - result["median_s"]["delta_sync_plan"]
    return result | {
        "tables": len(tables),
        "added_by_rehearsal_s": added,
        "hand_rehearsal_part_s": statistics.median(by_hand),
        "added_vs_hand_part": added / statistics.median(by_hand),
    }


def bench_import(bench: Bench, tables: list[TableDef], whole_estate: bool) -> dict[str, Any]:
    """`import` of the estate's tables vs `plan` of the same tables (import must cost no more)."""
    specs = write_specs(bench.work / f"specs_{len(tables)}", tables)
    # Whole schemas when the estate is exactly these tables (the listing is part of the cost), else by name.
    targets = sorted({t.name.split(".")[0] for t in tables}) if whole_estate else [t.name for t in tables]
    out = bench.work / "imported"

    def ours() -> float:
        shutil.rmtree(out, ignore_errors=True)
        elapsed = bench.run([PY, "-m", "delta_sync", "import", *targets, "--out", str(out)], bench.home)[0]
        written = sorted(p.relative_to(out).as_posix() for p in out.rglob("*.yaml"))
        if written != sorted(t.path for t in tables):
            raise SystemExit(f"import wrote {len(written)} spec files, expected {len(tables)}")
        return elapsed

    plan = [PY, "-m", "delta_sync", "plan", str(specs), "--detailed-exitcode"]
    result = bench.pair("import", ours, lambda: bench.run(plan, bench.home)[0])
    # What import wrote must plan as no change against the same estate.
    bench.run([PY, "-m", "delta_sync", "plan", str(out), "--detailed-exitcode"], bench.home)
    return result | {"tables": len(tables), "targets": targets if whole_estate else f"{len(targets)} table names"}


def bench_validate(bench: Bench, files: int) -> dict[str, Any]:
    specs = write_specs(bench.work / "validate_specs", estate(files))
    ours = [PY, "-m", "delta_sync", "validate", str(specs)]
    theirs = [PY, "-c", YAML_LOAD, str(specs)]
    c_loader = [PY, "-c", YAML_C_LOAD, str(specs)]
    result = bench.pair(
        "validate",
        lambda: bench.run(ours)[0],
        lambda: bench.run(theirs)[0],
        yaml_c_loader=lambda: bench.run(c_loader)[0],
    )
    return result | {
        "files": files,
        "ratio_vs_yaml_c_loader": result["median_s"]["delta_sync"] / result["median_s"]["yaml_c_loader"],
    }


EXAMPLE = ROOT / "specs"  # the README's example: 4 tables


def bench_engine(bench: Bench, tables: list[TableDef] | None, example: bool = True) -> dict[str, Any]:
    """The warm engine against a cold in-process run, on the README's example (and on the estate): plan,
    validate, sql; the hand-written PySpark read of the same tables; the cold run without the class archive;
    and where the time of a cold and a warm plan goes (bench/phases.py)."""
    results: dict[str, Any] = {}
    if example:
        results |= bench_engine_example(bench)
    if tables:
        results |= bench_engine_estate(bench, tables)
    return results


def bench_engine_example(bench: Bench) -> dict[str, Any]:
    from delta_sync.spark.jars import cache_dir

    home = bench.work / "example"
    specs = bench.work / "example_specs"
    shutil.copytree(EXAMPLE, specs)
    bench.run([PY, "-m", "delta_sync", "apply", str(specs), "--yes"], home)
    # The engine holds its catalog's Derby lock: cold runs read a copy (table locations still point at home).
    cold = bench.work / "example_cold"
    shutil.copytree(home, cold)
    listing = bench.work / "example_tables.txt"
    listing.write_text("".join(f"shop.{p.stem}\n" for p in sorted((specs / "shop").glob("*.yaml"))))
    plan = [PY, "-m", "delta_sync", "plan", str(specs), "--detailed-exitcode"]
    archives = cache_dir() / "jvm"
    aside = cache_dir() / "jvm.aside"

    def without_archive() -> float:
        # As before the class archive: the JVM loads every class from its jar.
        archives.rename(aside)
        try:
            return bench.run(plan, cold)[0]
        finally:
            aside.rename(archives)

    bench.run(plan, home, engine=True)  # starts the engine (and, stopped once, writes the class archive)
    if not any(archives.glob("*.jsa")):
        bench.run([PY, "-m", "delta_sync", "engine", "stop"], home)
        bench.run(plan, home, engine=True)
    results: dict[str, Any] = {
        "plan_example": bench.pair(
            "engine",
            lambda: bench.run(plan, home, engine=True)[0],
            lambda: bench.run(plan, cold)[0],
            pyspark_read=lambda: bench.run([PY, str(BENCH / "baseline_read.py"), str(cold), str(listing)])[0],
            cold_without_class_archive=without_archive,
        )
    }
    validate = [PY, "-m", "delta_sync", "validate", str(specs)]
    results["validate_example"] = bench.pair(
        "validate_warm", lambda: bench.run(validate, home, engine=True)[0], lambda: bench.run(validate, cold)[0]
    )
    sql = [PY, "-m", "delta_sync", "sql", "SELECT 1"]
    results["sql_select_1"] = bench.pair(
        "sql_warm", lambda: bench.run(sql, home, engine=True)[0], lambda: bench.run(sql, cold)[0]
    )
    phases = [PY, str(BENCH / "phases.py"), "plan", str(specs), "--detailed-exitcode"]
    results["phases_warm"] = json.loads(bench.run(phases, home, engine=True)[1])
    results["phases_cold"] = json.loads(bench.run(phases, cold)[1])
    bench.run([PY, "-m", "delta_sync", "engine", "stop"], home)
    return results


def bench_engine_estate(bench: Bench, tables: list[TableDef]) -> dict[str, Any]:
    big = write_specs(bench.work / f"specs_{len(tables)}", tables)
    plan_big = [PY, "-m", "delta_sync", "plan", str(big), "--detailed-exitcode"]
    estate_cold = bench.work / "estate_cold"
    shutil.copytree(bench.home, estate_cold)
    bench.run(plan_big, bench.home, engine=True)
    found = bench.pair(
        "engine_estate",
        lambda: bench.run(plan_big, bench.home, engine=True)[0],
        lambda: bench.run(plan_big, estate_cold)[0],
    )
    bench.run([PY, "-m", "delta_sync", "engine", "stop"], bench.home)
    return {"plan_estate": found | {"tables": len(tables)}}


def bench_probe(bench: Bench, rows: int) -> dict[str, Any]:
    found = bench.worker("probe", str(bench.work / "probe_home"), str(rows), str(max(bench.reps, 5)))
    timings = found["timings"]
    result = summarize({"delta_sync": timings["probe_3_checks"], "baseline": timings["count_scan"]}, TARGETS["probe"])
    scan = statistics.median(timings["count_scan"])
    mixed = statistics.median(timings["probe_2_checks_1_not_null"]) / scan
    not_null = statistics.median(timings["probe_3_not_null"]) / scan
    same_columns = statistics.median(timings["probe_3_checks"]) / statistics.median(timings["count_same_columns"])
    return result | {
        "rows": rows,
        "all_timings_s": timings,
        "median_all_s": {k: statistics.median(v) for k, v in timings.items()},
        "ratio_2_checks_1_not_null": mixed,
        "ratio_3_not_null": not_null,
        "ratio_vs_scan_of_same_columns": same_columns,
        "answers": found["answers"],
    }


def bench_keys(bench: Bench, rows: int) -> dict[str, Any]:
    """SparkCatalog.probe_keys of a primary key vs the duplicate and NULL counts written by hand in PySpark."""
    found = bench.worker("keys", str(bench.work / "keys_home"), str(rows), str(bench.reps))
    timings = found["timings"]
    result = summarize({"delta_sync": timings["probe_keys"], "baseline": timings["by_hand"]}, TARGETS["keys"])
    medians = {k: statistics.median(v) for k, v in timings.items()}
    return result | {
        "rows": rows,
        "all_timings_s": timings,
        "median_all_s": medians,
        "ratio_vs_group_by_count_only": medians["probe_keys"] / medians["group_by_count_only"],
        "answers": found["answers"],
    }


def machine() -> dict[str, Any]:
    java = subprocess.run(["java", "-version"], capture_output=True, text=True, check=False).stderr.splitlines()
    meminfo = Path("/proc/meminfo").read_text().split()
    from importlib.metadata import version

    from delta_sync.spark.jars import delta_jars

    return {
        "cores": os.cpu_count(),
        "ram_gib": round(int(meminfo[meminfo.index("MemTotal:") + 1]) / 2**20, 1),
        "cpu": next(
            (
                line.split(":", 1)[1].strip()
                for line in Path("/proc/cpuinfo").read_text().splitlines()
                if "model name" in line
            ),
            platform.processor(),
        ),
        "os": platform.platform(),
        "java": java[0] if java else "?",
        "python": platform.python_version(),
        "pyspark": version("pyspark"),
        "delta_spark_python": version("delta-spark"),
        "delta_jars": delta_jars().version,
        "loadavg_start": os.getloadavg(),
    }


def code() -> dict[str, Any]:
    """Which delta-sync the child processes import (PYTHONPATH can pin a snapshot), and the repo's HEAD."""
    import delta_sync

    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=False).stdout.strip()

    return {
        "delta_sync": str(Path(delta_sync.__file__).parent),
        "head": git("rev-parse", "--short", "HEAD"),
        "dirty": bool(git("status", "--porcelain", "--", "delta_sync")),
    }


def report(results: dict[str, Any]) -> None:
    table = Table(title=f"delta-sync vs baseline (medians of {results['args']['reps']} reps; ratio = ours / theirs)")
    for column in ("measure", "delta-sync", "baseline", "ratio", "target", "result"):
        table.add_column(column, justify="left" if column == "measure" else "right")
    labels = {
        "plan": f"plan, {results['args']['tables']} unchanged tables",
        "apply": f"apply, migration of {results['args']['tables']} tables",
        "validate": f"validate, {results['args']['files']:,} spec files",
        "probe": f"probe 3 rules, {results['args']['rows']:,} rows",
        "import": f"import {results['args']['tables']} tables (baseline: plan)",
        "keys": f"primary key check, {results['args']['rows']:,} rows",
        "rehearse": f"plan --rehearse, migration of {results['args']['tables']} tables (baseline: by hand)",
    }
    for key, label in labels.items():
        if (found := results["sections"].get(key)) is None:
            continue
        medians = found["median_s"]
        verdict = "" if "pass" not in found else "[green]PASS[/]" if found["pass"] else "[red]MISS[/]"
        table.add_row(
            label,
            f"{medians['delta_sync']:.2f}s",
            f"{medians['baseline']:.2f}s",
            f"{found['ratio']:.2f}x",
            f"<= {found['target']}x" if "target" in found else "",
            verdict,
        )
        if key == "validate":
            c_loader = medians["yaml_c_loader"]
            table.add_row(
                "  same, vs libyaml's CSafeLoader", "", f"{c_loader:.2f}s", f"{medians['delta_sync'] / c_loader:.2f}x"
            )
        if key == "probe":
            table.add_row("  2 checks + 1 NOT NULL (one scan)", "", "", f"{found['ratio_2_checks_1_not_null']:.2f}x")
            table.add_row("  3 NOT NULL rules (Delta statistics, no scan)", "", "", f"{found['ratio_3_not_null']:.2f}x")
            by_hand = found["median_all_s"]["probe_query_by_hand"]
            table.add_row(
                "  same, vs the probe's own query run by hand",
                "",
                f"{by_hand:.2f}s",
                f"{found['median_s']['delta_sync'] / by_hand:.2f}x",
            )
            same = found["median_all_s"]["count_same_columns"]
            table.add_row(
                "  same, vs a scan of the 3 columns",
                "",
                f"{same:.2f}s",
                f"{found['ratio_vs_scan_of_same_columns']:.2f}x",
            )
        if key == "keys":
            alone = found["median_all_s"]["group_by_count_only"]
            table.add_row(
                "  same, vs the by-hand groupBy count alone (no NULL count)",
                "",
                f"{alone:.2f}s",
                f"{found['ratio_vs_group_by_count_only']:.2f}x",
            )
        if key == "apply":
            serial = medians["delta_sync_parallel_1"]
            table.add_row(
                "  same, delta-sync --parallel 1", f"{serial:.2f}s", "", f"{serial / medians['baseline']:.2f}x"
            )
            ours, theirs = found["commits"]["delta_sync"], found["commits"]["baseline"]
            table.add_row(
                "apply, Delta commits per table",
                str(ours["per_table_max"]),
                str(theirs["per_table_max"]),
                f"{ours['total'] / theirs['total']:.2f}x",
                "<= 1x",
                "[green]PASS[/]" if found["commits_pass"] else "[red]MISS[/]",
            )
    if table.row_count:
        console.print(table)
    if engine := results["sections"].get("engine"):
        for key, found in engine.items():
            if "median_s" in found:
                medians = ", ".join(f"{side} {value:.2f}s" for side, value in found["median_s"].items())
                console.print(f"{key}: {medians}; warm / cold {found['ratio']:.2f}x")
            else:
                console.print(f"{key}: {found}")
    if "scale" in results["sections"] or "delta_engine" in results["sections"]:
        import scale

        if found := results["sections"].get("scale"):
            scale.report_scale(found)
        if found := results["sections"].get("delta_engine"):
            scale.report_delta_engine(found)
    if growth := results["sections"].get("growth"):
        points = ", ".join(f"{k} tables {v:.1f}s" for k, v in growth["median_s"].items())
        console.print(
            f"growth (plan, medians): {points}; per table {growth['per_table_s']:.3f}s, fixed {growth['fixed_s']:.1f}s"
        )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tables", type=int, default=200, help="tables in the estate for plan and apply")
    parser.add_argument("--reps", type=int, default=3, help="repetitions of each measurement")
    parser.add_argument("--rows", type=int, default=2_000_000, help="rows of the probe's and the key check's table")
    parser.add_argument("--growth", type=int, action="append", default=[], help="extra estate size for growth")
    parser.add_argument("--files", type=int, default=1000, help="spec files for validate")
    parser.add_argument("--only", default="plan,growth,apply,import,validate,probe,keys", help="sections to run")
    parser.add_argument("--out", type=Path, default=BENCH / "results.json")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder (estate, logs)")
    scaling = parser.add_argument_group("scale and delta_engine (bench/scale.py)")
    scaling.add_argument("--sizes", default="50,200,1000", help="estate sizes for scale")
    scaling.add_argument("--scale-reps", default="50:5,200:3,1000:3", help="repetitions per size (fast, jvm)")
    scaling.add_argument("--baseline-reps", default="50:3,200:1,1000:0", help="baseline reps per size (0: none)")
    scaling.add_argument("--estate", type=Path, help="keep the scale estate here and reuse it in later runs")
    scaling.add_argument("--no-example", action="store_true", help="scale without the example project")
    scaling.add_argument("--delta-engine-venv", type=Path, default=None, help="delta-engine's venv (made if absent)")
    scaling.add_argument("--delta-engine-tables", type=int, default=50, help="tables for delta_engine")
    args = parser.parse_args(argv)
    sections = set(args.only.split(","))
    sizes = sorted({50, 200, *args.growth}) if "growth" in sections else []
    results: dict[str, Any] = {
        "args": vars(args) | {"out": str(args.out)},
        "machine": machine(),
        "code": code(),
        "sections": {},
    }
    work = Path(tempfile.mkdtemp(prefix="delta-sync-bench-"))
    bench = Bench(work, args.reps)
    console.log(f"working in {work} (log: {bench.log})")
    started = time.perf_counter()
    failed = True
    try:
        if sections & {"plan", "growth", "apply", "import", "rehearse", "engine_estate"}:
            tables = estate(max(args.tables, *sizes) if sizes else args.tables)
            console.log(f"building an estate of {len(tables)} tables...")
            built = bench.worker(
                "build", str(bench.home), str(write_specs(work / "specs_all", tables)), str(len(tables))
            )
            results["estate"] = {"tables": len(tables), "build": built}
            shutil.copytree(bench.home, bench.snapshot)
        if "plan" in sections:
            results["sections"]["plan"] = bench_plan(bench, tables[: args.tables])
        if sizes:
            results["sections"]["growth"] = bench_growth(bench, tables, sizes)
        if "apply" in sections:
            results["sections"]["apply"] = bench_apply(bench, tables[: args.tables])
        if "rehearse" in sections:
            results["sections"]["rehearse"] = bench_rehearse(bench, tables[: args.tables])
        if "import" in sections:
            results["sections"]["import"] = bench_import(bench, tables[: args.tables], len(tables) == args.tables)
        if sections & {"engine", "engine_estate"}:
            estate_tables = tables[: args.tables] if "engine_estate" in sections else None
            results["sections"]["engine"] = bench_engine(bench, estate_tables, example="engine" in sections)
        if "validate" in sections:
            results["sections"]["validate"] = bench_validate(bench, args.files)
        if "probe" in sections:
            results["sections"]["probe"] = bench_probe(bench, args.rows)
        if "keys" in sections:
            results["sections"]["keys"] = bench_keys(bench, args.rows)
        if "scale" in sections:
            import scale

            sizes = sorted(int(size) for size in args.sizes.split(","))
            reps = scale.reps_by_size(args.scale_reps)
            results["sections"]["scale"] = scale.bench_scale(
                bench,
                sizes,
                {size: reps.get(size, args.reps) for size in sizes},
                scale.reps_by_size(args.baseline_reps),
                args.estate,
                example=not args.no_example,
            )
        if "delta_engine" in sections:
            import scale

            results["sections"]["delta_engine"] = scale.bench_delta_engine(
                bench,
                max(args.reps, 1),
                args.estate,
                args.delta_engine_venv or scale.DELTA_ENGINE_VENV,
                args.delta_engine_tables,
            )
        failed = False
    finally:
        results["wall_s"] = time.perf_counter() - started
        results["machine"]["loadavg_end"] = os.getloadavg()
        results["code_end"] = code()
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(results, indent=2, default=str) + "\n")
        if args.keep or failed:
            console.log(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    report(results)
    console.log(f"raw timings, medians and ratios in {args.out}")


if __name__ == "__main__":
    main()

"""Plan at scale and against delta-engine (issue 37), the two sections `bench/run.py --only scale,delta_engine` runs.

scale: `plan` of 50, 200 and 1,000 unchanged tables, three sides taking turns on one estate:
- `fast`: delta-sync's fast reader (DELTA_SYNC_READER unset), its table cache in place (the steady state);
- `fast_no_cache`: the same with the cache file deleted before each run, as a fresh CI checkout (cold only);
- `jvm`: today's reader, one table at a time through the JVM (DELTA_SYNC_READER=jvm);
- `baseline`: the hand-written PySpark read (bench/baseline_read.py: `spark.table().schema` + `DESCRIBE DETAIL`).
Cold is a fresh process per repetition, in-process as on CI (CI=true), the JVM's class archive in place. Warm is
through the warm engine, as at a terminal (the engine started and each size planned once before the timed runs);
the baseline's warm figure is a second pass of its reads in the same session, right after its cold pass (one
process gives both, which keeps its 1,000-table runs affordable). Plus the README's example (specs/, 4 tables)
cold. The estate is built once (`bench/worker.py create`: one CREATE TABLE per table, no rows) and reused for
every side and size: a size is the first N tables of it, so `plan` lists the same schemas at every size.

delta_engine: the 50-table no-change plan against delta-engine 0.14.0 on the same Spark/Delta/Derby configuration
(bench/delta_engine_shim.py, its own Python >= 3.12 venv), 5 paired runs, medians: cold (delta-sync in-process vs
delta-engine's CLI, each a fresh process), at a terminal (delta-sync through its engine vs delta-engine's CLI,
which has no engine), and as a library on one live session each (each plan after the first).
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from estate import TableDef, estate, write_specs
from rich.console import Console
from rich.table import Table

if TYPE_CHECKING:
    from run import Bench

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
PY = sys.executable
READER = "DELTA_SYNC_READER"
READERS: dict[str, dict[str, str]] = {"fast": {}, "fast_no_cache": {}, "jvm": {READER: "jvm"}}
# Bumped when estate.create_sql changes what it builds: an estate kept with --estate is rebuilt then.
ESTATE_KIND = "create_sql 1"
GOALS = {
    "warm_plan_1000_s": 3.0,  # warm plan of 1,000 unchanged tables
    "warm_per_table_s": 0.002,  # per table above the fixed part, warm (200 -> 1,000)
    "cold_plan_1000_s": 25.0,  # cold plan (CI, in-process, class archive in place) of 1,000 tables
    "cold_example_s": 5.0,  # cold plan of the 4-table example
}
DELTA_ENGINE_GOALS = {"cold": 0.5, "terminal": 0.05, "live_session": 0.1}
RATIO_SIDES = (
    ("cold", "delta_sync_cold", "delta_engine_cli"),
    ("cold_no_cache", "delta_sync_cold_no_cache", "delta_engine_cli"),
    ("terminal", "delta_sync_terminal", "delta_engine_cli"),
    ("live_session", "delta_sync_library", "delta_engine_library"),
)
DELTA_ENGINE = "delta-engine==0.14.0"
DELTA_ENGINE_VENV = Path("/tmp/de-venv")
console = Console(width=130)


def sample(seconds: float) -> dict[str, float]:
    return {"s": seconds, "load1": os.getloadavg()[0]}


def medians(raw: Mapping[str, Sequence[Mapping[str, float]]]) -> dict[str, float]:
    return {side: statistics.median(s["s"] for s in values) for side, values in raw.items() if values}


def reps_by_size(text: str) -> dict[int, int]:
    """`50:5,200:3,1000:3` -> {50: 5, 200: 3, 1000: 3}."""
    return {int(size): int(reps) for size, reps in (part.split(":") for part in text.split(",") if part)}


def cache_file(home: Path) -> Path:
    """Where the fast reader keeps what it read of each table, for the local catalog in `home`."""
    try:
        from delta_sync.spark import table_cache

        return home / str(table_cache.CACHE_FILE)
    except (ImportError, AttributeError):
        return home / "cache" / "tables.json"


def copy_catalog(home: Path, to: Path) -> Path:
    """The metastore of `home` for another process (Derby admits one per metastore); its tables stay in `home`'s
    warehouse, where the metastore's locations point. No engine, lock or cache is copied."""
    shutil.rmtree(to, ignore_errors=True)
    to.mkdir(parents=True)
    shutil.copytree(home / "metastore_db", to / "metastore_db")
    return to


def prepare_estate(bench: Bench, count: int, keep: Path | None) -> tuple[Path, dict[str, Any]]:
    """The estate of `count` tables (or more), built once; kept in `keep` across runs when given."""
    home = keep.resolve() if keep is not None else bench.work / "estate_scale"
    marker = home / "bench-estate.json"
    if marker.exists():
        found = json.loads(marker.read_text())
        if found.get("kind") == ESTATE_KIND and found.get("tables", 0) >= count:
            console.log(f"reusing the estate of {found['tables']} tables in {home}")
            return home, found | {"reused": True}
    stop_engine(bench, home)
    shutil.rmtree(home, ignore_errors=True)
    console.log(f"building an estate of {count} tables in {home} (one CREATE TABLE each)...")
    built = bench.worker("create", str(home), str(count), "2")
    found = {"kind": ESTATE_KIND, "tables": count, "create_s": built["create_s"], "threads": built["threads"]}
    marker.write_text(json.dumps(found) + "\n")
    return home, found | {"reused": False}


def stop_engine(bench: Bench, home: Path) -> None:
    if (home / "engine").exists():
        bench.run([PY, "-m", "delta_sync", "engine", "stop"], home, engine=True)


def ensure_class_archive(bench: Bench, home: Path, specs: Path) -> dict[str, Any]:
    """The JVM's class archive, which cold runs map: the engine writes it when it stops, if none is there."""
    from delta_sync.spark.classcache import archive_path
    from delta_sync.spark.jars import delta_jars

    archive = archive_path(delta_jars(), {})
    written = False
    if archive is not None and not archive.exists():
        console.log("no class archive yet: starting and stopping the engine to write it...")
        bench.run([PY, "-m", "delta_sync", "plan", str(specs), "--detailed-exitcode"], home, engine=True)
        bench.run([PY, "-m", "delta_sync", "engine", "stop"], home, engine=True)
        written = True
    return {"path": str(archive), "in_place": archive is not None and archive.exists(), "written_now": written}


class Server:
    """A measuring process that stays up: one line in, one `TIME seconds rest` line out."""

    def __init__(self, command: Sequence[str], cwd: Path, log: Path, env: Mapping[str, str] | None = None) -> None:
        self.log: IO[str] = log.open("a")
        self.command = " ".join(command)
        environ = {k: v for k, v in os.environ.items() if k not in ("CI", READER)} | dict(env or {})
        self.process = subprocess.Popen(
            command, cwd=cwd, env=environ, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log, text=True
        )
        self._wait("READY")

    def _wait(self, prefix: str) -> str:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            if line.startswith(prefix):
                return line.strip()
            self.log.write(line)
        raise SystemExit(f"{self.command} exited {self.process.wait()} (log: {self.log.name})")

    def ask(self) -> tuple[float, str]:
        assert self.process.stdin is not None
        self.process.stdin.write("go\n")
        self.process.stdin.flush()
        _time, seconds, *rest = self._wait("TIME ").split()
        return float(seconds), " ".join(rest)

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        try:
            self.process.wait(timeout=120)
        except subprocess.TimeoutExpired:
            self.process.kill()
        self.log.close()


def take_turns(
    name: str, reps: int, sides: Mapping[str, Callable[[], float]], raw: dict[str, list[dict[str, float]]]
) -> None:
    """Each side `reps` times, the order reversed every other repetition, so that drifting load hits all alike."""
    order = list(sides.items())
    for rep in range(reps):
        for side, measure in order if rep % 2 == 0 else reversed(order):
            raw.setdefault(side, []).append(sample(measure()))
            console.log(
                f"{name} rep {rep + 1}/{reps} {side}: {raw[side][-1]['s']:.2f}s (load {raw[side][-1]['load1']:.1f})"
            )


def growth(by_size: Mapping[int, Mapping[str, float]]) -> dict[str, Any]:
    """Per side: seconds per added table between consecutive sizes, and a least-squares line over all sizes."""
    sides = sorted({side for found in by_size.values() for side in found})
    result: dict[str, Any] = {}
    for side in sides:
        points = sorted((size, found[side]) for size, found in by_size.items() if side in found)
        if len(points) < 2:
            continue
        xs, ys = [p[0] for p in points], [p[1] for p in points]
        slope, intercept = statistics.linear_regression(xs, ys)
        result[side] = {
            "median_s": {str(x): y for x, y in points},
            "per_added_table_s": {
                f"{xs[i]}->{xs[i + 1]}": (ys[i + 1] - ys[i]) / (xs[i + 1] - xs[i]) for i in range(len(xs) - 1)
            },
            "fit_per_table_s": slope,
            "fit_fixed_s": intercept,
        }
    return result


def bench_scale(
    bench: Bench,
    sizes: list[int],
    reps: dict[int, int],
    baseline_reps: dict[int, int],
    keep: Path | None,
    example: bool = True,
) -> dict[str, Any]:
    home, built = prepare_estate(bench, max(sizes), keep)
    tables = estate(max(sizes))
    stop_engine(bench, home)
    cold = copy_catalog(home, bench.work / "estate_scale_cold")
    specs = {size: write_specs(bench.work / f"specs_{size}", tables[:size]) for size in sizes}
    listings = {size: names_file(bench.work / f"tables_{size}.txt", tables[:size]) for size in sizes}
    archive = ensure_class_archive(bench, home, specs[min(sizes)])
    results: dict[str, Any] = {
        "estate": {"home": str(home), **built},
        "class_archive": archive,
        "reps": {str(k): v for k, v in reps.items()},
        "baseline_reps": {str(k): v for k, v in baseline_reps.items()},
        "cold": {},
        "warm": {},
    }

    def plan(size: int) -> list[str]:
        return [PY, "-m", "delta_sync", "plan", str(specs[size]), "--detailed-exitcode"]

    # Cold: a fresh process each, CI=true (in-process).
    for size in sizes:
        raw: dict[str, list[dict[str, float]]] = {}
        warm_baseline: list[dict[str, float]] = []
        # Once first: proves the estate unchanged for this size (exit 0) and leaves the fast reader's cache.
        first = bench.run(plan(size), cold, ci=True)[0]

        def no_cache(size: int = size) -> float:
            cache_file(cold).unlink(missing_ok=True)
            return bench.run(plan(size), cold, ci=True, extra=READERS["fast_no_cache"])[0]

        def baseline(size: int = size, warm_baseline: list[dict[str, float]] = warm_baseline) -> float:
            command = [PY, str(BENCH / "baseline_read.py"), str(cold), str(listings[size]), "2"]
            elapsed, out = bench.run(command, cold)
            passes = [float(line.split()[2]) for line in out.splitlines() if line.startswith("pass ")]
            warm_baseline.append(sample(passes[1]))
            return elapsed - passes[1]

        sides: dict[str, Callable[[], float]] = {
            "fast": lambda size=size: bench.run(plan(size), cold, ci=True, extra=READERS["fast"])[0],
            "fast_no_cache": no_cache,
            "jvm": lambda size=size: bench.run(plan(size), cold, ci=True, extra=READERS["jvm"])[0],
        }
        take_turns(f"cold {size}", reps[size], sides, raw)
        failed = None
        try:
            take_turns(f"cold {size}", baseline_reps.get(size, 0), {"baseline": baseline}, raw)
        except SystemExit as error:  # the hand-written read failing (1,000 tables) does not lose the rest
            failed = str(error)[-2000:]
            console.log(f"cold {size} baseline failed: {failed[-300:]}")
        results["cold"][str(size)] = {"raw": raw, "median_s": medians(raw), "first_fast_s": first}
        if failed:
            results["cold"][str(size)]["baseline_failed"] = failed
        results["warm"][str(size)] = {"raw": {"baseline": warm_baseline}}
        cache_file(cold).unlink(missing_ok=True)

    # Warm: through the engine on the estate itself.
    started = time.perf_counter()
    bench.run(plan(min(sizes)), home, engine=True)
    results["engine_start_s"] = time.perf_counter() - started
    try:
        for size in sizes:
            firsts = {
                side: bench.run(plan(size), home, engine=True, extra=READERS[side])[0] for side in ("fast", "jvm")
            }
            raw = results["warm"][str(size)]["raw"]
            sides = {
                side: lambda size=size, side=side: bench.run(plan(size), home, engine=True, extra=READERS[side])[0]
                for side in ("fast", "jvm")
            }
            take_turns(f"warm {size}", reps[size], sides, raw)
            results["warm"][str(size)] |= {"median_s": medians(raw), "first_s": firsts}
    finally:
        stop_engine(bench, home)
    if example:
        results["example_cold"] = bench_example_cold(bench, reps[min(sizes)])
    results["growth"] = {
        mode: growth({int(size): found["median_s"] for size, found in results[mode].items()})
        for mode in ("cold", "warm")
    }
    results["goals"] = goals(results, sizes)
    return results


def names_file(path: Path, tables: list[TableDef]) -> Path:
    path.write_text("".join(f"{t.name}\n" for t in tables))
    return path


def bench_example_cold(bench: Bench, reps: int) -> dict[str, Any]:
    """The README's example (specs/, 4 tables), applied, then planned cold by each side."""
    home = bench.work / "example_scale"
    specs = bench.work / "example_scale_specs"
    shutil.copytree(ROOT / "specs", specs, dirs_exist_ok=True)
    bench.run([PY, "-m", "delta_sync", "apply", str(specs), "--yes"], home, ci=True)
    listing = bench.work / "example_scale_tables.txt"
    listing.write_text("".join(f"shop.{p.stem}\n" for p in sorted((specs / "shop").glob("*.yaml"))))
    plan = [PY, "-m", "delta_sync", "plan", str(specs), "--detailed-exitcode"]
    first = bench.run(plan, home, ci=True)[0]

    def no_cache() -> float:
        cache_file(home).unlink(missing_ok=True)
        return bench.run(plan, home, ci=True, extra=READERS["fast_no_cache"])[0]

    raw: dict[str, list[dict[str, float]]] = {}
    take_turns(
        "example cold",
        reps,
        {
            "fast": lambda: bench.run(plan, home, ci=True, extra=READERS["fast"])[0],
            "fast_no_cache": no_cache,
            "jvm": lambda: bench.run(plan, home, ci=True, extra=READERS["jvm"])[0],
            "baseline": lambda: bench.run([PY, str(BENCH / "baseline_read.py"), str(home), str(listing)], home)[0],
        },
        raw,
    )
    return {"raw": raw, "median_s": medians(raw), "first_fast_s": first, "tables": 4}


def goals(results: Mapping[str, Any], sizes: list[int]) -> dict[str, Any]:
    top = str(max(sizes))
    found: dict[str, Any] = {}
    if top == "1000":
        warm = results["warm"][top]["median_s"].get("fast")
        cold = results["cold"][top]["median_s"].get("fast")
        cold_fresh = results["cold"][top]["median_s"].get("fast_no_cache")
        found["warm_plan_1000_s"] = {"value": warm, "goal": GOALS["warm_plan_1000_s"]}
        found["cold_plan_1000_s"] = {"value": cold, "goal": GOALS["cold_plan_1000_s"], "no_cache": cold_fresh}
        per_table = results["growth"]["warm"].get("fast", {}).get("per_added_table_s", {})
        last = per_table.get(f"{sorted(sizes)[-2]}->{top}") if len(sizes) > 1 else None
        found["warm_per_table_s"] = {"value": last, "goal": GOALS["warm_per_table_s"]}
    if example := results.get("example_cold"):
        found["cold_example_s"] = {
            "value": example["median_s"].get("fast"),
            "goal": GOALS["cold_example_s"],
            "no_cache": example["median_s"].get("fast_no_cache"),
        }
    for goal in found.values():
        goal["met"] = goal["value"] is not None and goal["value"] <= goal["goal"]
    return found


# delta-engine 0.14.0


def delta_engine_python(venv: Path) -> Path:
    """delta-engine's interpreter: a venv of its own under /tmp (it needs Python >= 3.12; delta-sync's is 3.11),
    made here with the same pyspark and delta-spark as delta-sync's when it is not there yet."""
    python = venv / "bin" / "python"
    if python.exists():
        return python
    from importlib.metadata import version

    found = shutil.which("python3.12") or next(
        (str(p) for p in sorted(Path.home().glob(".pyenv/versions/3.12*/bin/python3.12"))), None
    )
    if found is None:
        raise SystemExit("delta-engine needs Python >= 3.12: none found (python3.12 on PATH or under ~/.pyenv)")
    subprocess.run([found, "-m", "venv", str(venv)], check=True)
    wanted = [
        DELTA_ENGINE,
        f"pyspark=={version('pyspark')}",
        f"delta-spark=={version('delta-spark')}",
        "typer>=0.15.4,<1",
    ]
    subprocess.run([str(python), "-m", "pip", "install", "-q", *wanted], check=True)
    return python


def spark_conf_file(home: Path, path: Path) -> Path:
    """delta-sync's Spark configuration for the local catalog in `home`, for the other interpreter to read."""
    from delta_sync.spark.jars import delta_jars
    from delta_sync.spark.session import LocalCatalog, spark_conf

    path.write_text(json.dumps(spark_conf(LocalCatalog(home), delta_jars()), indent=1) + "\n")
    return path


def bench_delta_engine(bench: Bench, reps: int, keep: Path | None, venv: Path, count: int = 50) -> dict[str, Any]:
    from delta_engine_shim import declarations

    python = delta_engine_python(venv)
    home, built = prepare_estate(bench, count, keep)
    stop_engine(bench, home)
    tables = estate(count)
    specs = write_specs(bench.work / f"de_specs_{count}", tables)
    decl = bench.work / "de_declarations"
    decl.mkdir(exist_ok=True)
    module = f"de_tables_{count}"
    declarations(decl / f"{module}.py", specs)
    reference = f"{module}:tables"
    cold = copy_catalog(home, bench.work / "de_cold")
    live_ds = copy_catalog(home, bench.work / "de_live_delta_sync")
    live_de = copy_catalog(home, bench.work / "de_live_delta_engine")
    conf_cold = spark_conf_file(cold, bench.work / "de_conf_cold.json")
    conf_live = spark_conf_file(live_de, bench.work / "de_conf_live.json")
    versions = subprocess.run(
        [
            str(python),
            "-c",
            "import delta_engine, pyspark, sys; "
            "print(delta_engine.__version__, pyspark.__version__, sys.version.split()[0])",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    plan = [PY, "-m", "delta_sync", "plan", str(specs), "--detailed-exitcode"]
    engine_cli = [str(python), str(BENCH / "delta_engine_shim.py"), "cli", str(cold), str(conf_cold), reference]
    # Each side once before the timed runs: both must find no change (exit 0; delta-engine's --fail-on-changes).
    first = {
        "delta_sync_cold": bench.run(plan, cold, ci=True)[0],
        "delta_engine_cli": bench.run(engine_cli, cold, cwd=decl)[0],
    }
    started = time.perf_counter()
    bench.run(plan, home, engine=True)
    first["delta_sync_engine_start"] = time.perf_counter() - started

    def no_cache() -> float:
        cache_file(cold).unlink(missing_ok=True)
        return bench.run(plan, cold, ci=True)[0]

    raw: dict[str, list[dict[str, float]]] = {}
    try:
        take_turns(
            "delta-engine",
            reps,
            {
                "delta_sync_cold": lambda: bench.run(plan, cold, ci=True)[0],
                "delta_sync_cold_no_cache": no_cache,
                "delta_sync_terminal": lambda: bench.run(plan, home, engine=True)[0],
                "delta_engine_cli": lambda: bench.run(engine_cli, cold, cwd=decl)[0],
            },
            raw,
        )
    finally:
        stop_engine(bench, home)
    # As a library on one live session each: each plan after the first.
    log = bench.work / "servers.log"
    ours = Server([PY, str(BENCH / "worker.py"), "serve-plan", str(live_ds), str(specs)], bench.work, log)
    theirs = Server(
        [str(python), str(BENCH / "delta_engine_shim.py"), "serve", str(live_de), str(conf_live), reference], decl, log
    )
    answers: dict[str, set[str]] = {"delta_sync_library": set(), "delta_engine_library": set()}

    def ask(server: Server, side: str) -> float:
        elapsed, answer = server.ask()
        answers[side].add(answer)
        return elapsed

    try:
        first["delta_sync_library"] = ask(ours, "delta_sync_library")
        first["delta_engine_library"] = ask(theirs, "delta_engine_library")
        take_turns(
            "live session",
            reps,
            {
                "delta_sync_library": lambda: ask(ours, "delta_sync_library"),
                "delta_engine_library": lambda: ask(theirs, "delta_engine_library"),
            },
            raw,
        )
    finally:
        ours.close()
        theirs.close()
    if answers["delta_sync_library"] != {"actions=0"} or answers["delta_engine_library"] != {
        "changes=False failures=False"
    }:
        raise SystemExit(f"a live-session plan found changes: {answers}")
    found = medians(raw)
    ratios = {key: found[ours] / found[theirs] for key, ours, theirs in RATIO_SIDES}
    pairs = {key: (ours, theirs) for key, ours, theirs in RATIO_SIDES}
    paired = {  # the ratio within each repetition (the two sides ran minutes apart at most), then its median
        key: statistics.median(a["s"] / b["s"] for a, b in zip(raw[ours], raw[theirs], strict=True))
        for key, (ours, theirs) in pairs.items()
    }
    return {
        "tables": count,
        "paired_ratios": paired,
        "estate": {"home": str(home), **built},
        "delta_engine": {"version": versions[0], "pyspark": versions[1], "python": versions[2], "venv": str(venv)},
        "raw": raw,
        "median_s": found,
        "first_s": first,
        "ratios": ratios,
        "goals": {k: {"ratio": ratios[k], "goal": g, "met": ratios[k] <= g} for k, g in DELTA_ENGINE_GOALS.items()},
        "answers": {k: sorted(v) for k, v in answers.items()},
    }


# Report


def seconds(value: float | None) -> str:
    return "" if value is None else f"{value:.2f}s"


def report_scale(found: Mapping[str, Any]) -> None:
    table = Table(title="plan of N unchanged tables (medians; s)")
    for column in (
        "tables",
        "mode",
        "fast",
        "fast, no cache",
        "jvm (today)",
        "baseline",
        "fast / jvm",
        "fast / baseline",
    ):
        table.add_column(column, justify="right")
    for mode in ("cold", "warm"):
        for size, result in found[mode].items():
            m = result["median_s"]
            fast, jvm, base = m.get("fast"), m.get("jvm"), m.get("baseline")
            table.add_row(
                size,
                mode,
                seconds(fast),
                seconds(m.get("fast_no_cache")),
                seconds(jvm),
                seconds(base),
                f"{fast / jvm:.3f}x" if fast and jvm else "",
                f"{fast / base:.3f}x" if fast and base else "",
            )
    if example := found.get("example_cold"):
        m = example["median_s"]
        table.add_row(
            "4 (example)",
            "cold",
            seconds(m.get("fast")),
            seconds(m.get("fast_no_cache")),
            seconds(m.get("jvm")),
            seconds(m.get("baseline")),
            f"{m['fast'] / m['jvm']:.3f}x",
            f"{m['fast'] / m['baseline']:.3f}x",
        )
    console.print(table)
    for mode, sides in found["growth"].items():
        for side, line in sides.items():
            steps = ", ".join(f"{k}: {v * 1000:.1f} ms" for k, v in line["per_added_table_s"].items())
            console.print(
                f"growth {mode} {side}: per added table {steps}; "
                f"fit {line['fit_per_table_s'] * 1000:.1f} ms/table + {line['fit_fixed_s']:.1f}s"
            )
    for name, goal in found["goals"].items():
        verdict = "[green]met[/]" if goal["met"] else "[red]missed[/]"
        console.print(f"goal {name}: {goal['value']} (goal <= {goal['goal']}) {verdict}")


def report_delta_engine(found: Mapping[str, Any]) -> None:
    m = found["median_s"]
    table = Table(
        title=f"{found['tables']} unchanged tables: delta-sync vs delta-engine "
        f"{found['delta_engine']['version']} (medians; s)"
    )
    for column in ("measure", "delta-sync", "delta-engine", "ratio", "paired", "goal", ""):
        table.add_column(column, justify="right")
    rows = [
        ("cold (fresh process)", "delta_sync_cold", "delta_engine_cli", "cold"),
        ("cold, delta-sync without its cache", "delta_sync_cold_no_cache", "delta_engine_cli", "cold_no_cache"),
        ("at a terminal (engine vs CLI)", "delta_sync_terminal", "delta_engine_cli", "terminal"),
        ("library, live session, after the first", "delta_sync_library", "delta_engine_library", "live_session"),
    ]
    for label, ours, theirs, key in rows:
        goal = found["goals"].get(key)
        table.add_row(
            label,
            seconds(m[ours]),
            seconds(m[theirs]),
            f"{found['ratios'][key]:.3f}x",
            f"{found['paired_ratios'][key]:.3f}x" if "paired_ratios" in found else "",
            f"<= {goal['goal']}x" if goal else "",
            ("[green]met[/]" if goal["met"] else "[red]missed[/]") if goal else "",
        )
    console.print(table)

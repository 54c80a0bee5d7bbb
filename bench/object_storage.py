"""Plan of unchanged tables on S3 (issue 46, point 5): the fast reader (`_delta_log` read from Python through
obstore) side by side with the JVM reader (`DELTA_SYNC_READER=jvm`: Delta's snapshot through S3A, one table at a
time on 4 threads), taking turns, on one estate on moto's S3 server.

python bench/object_storage.py --tables 1000 --reps 3 --out bench/results_object_storage.json

The estate: `--tables` tables of bench/estate.py, each made by one `CREATE TABLE` through Spark and S3A in an
environment whose warehouse is `s3a://lake/warehouse` (`build`, a process of its own). The project's
`delta-sync.yaml` takes its S3 endpoint from `LAKE_ENDPOINT`, which points at a counting proxy in front of moto
(tests/servers/s3_proxy.py) that adds 0 ms, then 20 ms (as real S3 answers), to every request. For each delay:
*warm* is `plan` through the warm engine (started once per delay, its first plan not timed), *cold* is `plan` as
on CI (`CI=true`, a fresh process, the class archive the engine wrote in place), with the fast reader's cache in
place (an unchanged estate) and, for the fast reader, without it (`no_cache`: a fresh checkout). Every plan must
exit 0 (nothing to do). Requests are counted at the proxy: per table, for one warm plan of each reader.
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
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from estate import DOMAINS, create_sql, estate, write_specs
from run import Bench, console

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
PY = sys.executable
BUCKET = "lake"
ACCESS, SECRET = "bench-access", "bench-secret-not-printed"
READERS: dict[str, dict[str, str]] = {"fast": {}, "jvm": {"DELTA_SYNC_READER": "jvm"}}
GOALS = {"requests_per_table_warm": 2.0, "warm_s": 3.0, "cold_s": 25.0, "warm_20ms_s": 5.0}
PROJECT = """\
default_env: lake
envs:
  lake:
    spark:
      conf:
        spark.sql.warehouse.dir: s3a://lake/warehouse
        spark.hadoop.fs.s3a.endpoint: ${env:LAKE_ENDPOINT}
        spark.hadoop.fs.s3a.path.style.access: "true"
        spark.hadoop.fs.s3a.endpoint.region: us-east-1
        spark.hadoop.fs.s3a.access.key: bench-access
        spark.hadoop.fs.s3a.secret.key: ${env:LAKE_SECRET}
"""


def lake_conf(endpoint: str) -> dict[str, str]:
    return {
        "spark.sql.warehouse.dir": f"s3a://{BUCKET}/warehouse",
        "spark.hadoop.fs.s3a.endpoint": endpoint,
        "spark.hadoop.fs.s3a.path.style.access": "true",
        "spark.hadoop.fs.s3a.endpoint.region": "us-east-1",
        "spark.hadoop.fs.s3a.access.key": ACCESS,
        "spark.hadoop.fs.s3a.secret.key": SECRET,
    }


def build(home: Path, endpoint: str, count: int) -> dict[str, Any]:
    """The estate on S3, made through Spark and S3A (in its own process: Derby admits one per metastore)."""
    from concurrent.futures import ThreadPoolExecutor

    sys.path.insert(0, str(ROOT))
    from delta_sync.spark.catalog import SparkCatalog
    from delta_sync.spark.session import LocalCatalog

    spark = SparkCatalog(LocalCatalog(home, conf=lake_conf(endpoint))).spark
    started = time.perf_counter()
    for domain in DOMAINS:
        spark.sql(f"CREATE SCHEMA IF NOT EXISTS {domain}")
    with ThreadPoolExecutor(4) as pool:
        list(pool.map(lambda table: spark.sql(create_sql(table)), estate(count)))
    return {"tables": count, "create_s": time.perf_counter() - started}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tables", type=int, default=1000)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--delays", default="0,0.02")
    parser.add_argument("--readers", default="fast,jvm", help="fast,jvm: the sides measured")
    parser.add_argument("--cold-reps", type=int, default=-1, help="repetitions of the cold runs (default: --reps)")
    parser.add_argument("--out", default="")
    parser.add_argument("--build", nargs=3, help=argparse.SUPPRESS)  # HOME ENDPOINT COUNT, in a child process
    args = parser.parse_args()
    if args.build:
        home, endpoint, count = args.build
        print("RESULT " + json.dumps(build(Path(home), endpoint, int(count))), flush=True)
        return

    sys.path.insert(0, str(ROOT))
    from tests.servers.s3 import s3_server
    from tests.servers.s3_proxy import counting_proxy

    started_all = time.perf_counter()
    work = Path(tempfile.mkdtemp(prefix="bench-s3-"))
    bench = Bench(work, args.reps)
    project = work / "project"
    specs = write_specs(project / "specs", estate(args.tables))
    (project / "delta-sync.yaml").write_text(PROJECT)
    home = work / "home"
    results: dict[str, Any] = {
        "args": vars(args),
        "machine": {
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "load_start": os.getloadavg(),
            "commit": subprocess.run(
                ["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True
            ).stdout.strip(),
        },
        "delays": {},
    }
    plan = [PY, "-m", "delta_sync", "plan", str(specs), "--detailed-exitcode"]
    with s3_server(work) as s3:
        console.log(f"building {args.tables} tables on S3 (one CREATE TABLE each, through S3A)...")
        elapsed, out = bench.run([PY, __file__, "--build", str(home), s3.endpoint, str(args.tables)], cwd=project)
        results["estate"] = json.loads(out.strip().splitlines()[-1][len("RESULT ") :]) | {"wall_s": elapsed}
        console.log(f"built in {elapsed:.0f} s")
        for delay in [float(d) for d in args.delays.split(",")]:
            with counting_proxy(s3.endpoint, delay) as proxy:
                env = {"LAKE_ENDPOINT": proxy.url, "LAKE_SECRET": SECRET}
                results["delays"][f"{delay * 1000:.0f}ms"] = measure(bench, plan, home, project, env, proxy, args)
    results["machine"]["load_end"] = os.getloadavg()
    results["wall_s"] = time.perf_counter() - started_all
    results["goals"] = goals(results, args.tables)
    console.log(json.dumps(results["goals"], indent=2))
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=2) + "\n")
    shutil.rmtree(work, ignore_errors=True)


def measure(
    bench: Bench, plan: list[str], home: Path, project: Path, env: dict[str, str], proxy: Any, args: Any
) -> dict[str, Any]:
    """Warm (through the engine, started here) then cold (in-process, as on CI), each reader taking turns."""
    found: dict[str, Any] = {"warm": {}, "cold": {}, "requests": {}}
    cache = home / "cache" / "tables.json"
    readers = {side: READERS[side] for side in args.readers.split(",")}
    cold_reps = args.reps if args.cold_reps < 0 else args.cold_reps

    def run(side: str, engine: bool) -> float:
        return bench.run(plan, home, engine=engine, ci=not engine, extra=env | readers[side], cwd=project)[0]

    # The engine's first plan (not timed) starts it and fills the cache.
    bench.run(plan, home, engine=True, extra=env, cwd=project)
    for side in readers:
        run(side, engine=True)
        proxy.reset()
        run(side, engine=True)
        counts = proxy.snapshot()
        found["requests"][side] = {"counts": counts, "per_table": sum(counts.values()) / args.tables}
        console.log(f"warm {side}: {found['requests'][side]}")
    warm: dict[str, Callable[[], float]] = {side: partial(run, side, True) for side in readers}
    take_turns("warm", args.reps, warm, found["warm"])
    # Stopping the engine writes the JVM's class archive for this class path, which the cold runs map.
    bench.run([PY, "-m", "delta_sync", "engine", "stop"], home, engine=True, extra=env, cwd=project)

    def no_cache() -> float:
        cache.unlink(missing_ok=True)
        return run("fast", engine=False)

    sides: dict[str, Callable[[], float]] = {side: partial(run, side, False) for side in readers}
    sides["fast_no_cache"] = no_cache
    take_turns("cold", cold_reps, sides, found["cold"])
    run("fast", engine=False)  # the cache back in place for the next delay
    for mode in ("warm", "cold"):
        found[f"{mode}_median_s"] = {side: statistics.median(v) for side, v in found[mode].items() if v}
    return found


def take_turns(name: str, reps: int, sides: dict[str, Callable[[], float]], raw: dict[str, list[float]]) -> None:
    order = list(sides.items())
    for rep in range(reps):
        for side, measure_side in order if rep % 2 == 0 else reversed(order):
            raw.setdefault(side, []).append(measure_side())
            console.log(f"{name} rep {rep + 1}/{reps} {side}: {raw[side][-1]:.2f}s (load {os.getloadavg()[0]:.1f})")


def goals(results: dict[str, Any], tables: int) -> dict[str, Any]:
    found: dict[str, Any] = {}
    plain = results["delays"].get("0ms")
    slow = results["delays"].get("20ms")
    if plain:
        per_table = plain["requests"]["fast"]["per_table"]
        found["requests_per_table_warm"] = {"value": per_table, "goal": 2.0, "met": per_table <= 2.0}
        found["warm_s"] = {"value": plain["warm_median_s"]["fast"], "goal": 3.0}
        found["cold_s"] = {"value": plain["cold_median_s"]["fast"], "goal": 25.0}
    if slow:
        found["warm_20ms_s"] = {"value": slow["warm_median_s"]["fast"], "goal": 5.0}
    for value in found.values():
        value["met"] = value["value"] <= value["goal"]
    found["tables"] = tables
    return found


if __name__ == "__main__":
    main()

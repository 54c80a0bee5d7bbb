"""Warm `plan` of N unchanged tables through the engine, with the catalog entries reused across commands
(delta_sync.spark.catalog_events, the default) and without (DELTA_SYNC_CATALOG_REUSE=off), taking turns in one
run on one engine (issue 47, point 5). Sizes are the first N tables of one estate (bench/worker.py create: one
CREATE TABLE each, no rows), each with its own spec folder, planned once before the timed runs.

    python bench/catalog_reuse.py --sizes 50,1000 --reps 5 --out bench/results_catalog_reuse.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from estate import estate, write_specs

BENCH = Path(__file__).resolve().parent
PY = sys.executable
SIDES = {"reuse": {}, "no_reuse": {"DELTA_SYNC_CATALOG_REUSE": "off"}}


def run(command: list[str], home: Path, extra: dict[str, str]) -> float:
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "DELTA_SYNC_NO_ENGINE")}
    env |= {"NO_COLOR": "1", "DELTA_SYNC_HOME": str(home), "DELTA_SYNC_ENGINE_IDLE": "3600", **extra}
    started = time.perf_counter()
    done = subprocess.run(command, cwd=home, env=env, capture_output=True, text=True, check=False)
    took = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{command} exited {done.returncode}:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    return took


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="50,1000")
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--estate", type=Path, help="a folder to keep the estate in across runs")
    parser.add_argument("--out", type=Path, default=BENCH / "results_catalog_reuse.json")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    home = (args.estate or Path(tempfile.mkdtemp(prefix="catalog-reuse-"))).resolve()
    marker = home / "bench-estate.json"
    if not (marker.exists() and json.loads(marker.read_text()).get("tables", 0) >= max(sizes)):
        print(f"building an estate of {max(sizes)} tables in {home} ...", flush=True)
        built = subprocess.run(
            [PY, str(BENCH / "worker.py"), "create", str(home), str(max(sizes)), "2"],
            capture_output=True,
            text=True,
            check=True,
        )
        marker.write_text(json.dumps({"tables": max(sizes), "worker": built.stdout.strip()[-500:]}) + "\n")
    tables = estate(max(sizes))
    plans = {}
    for size in sizes:
        specs = write_specs(home / f"specs_{size}", tables[:size])
        plans[size] = [PY, "-m", "delta_sync", "plan", str(specs), "--detailed-exitcode"]
        for extra in SIDES.values():
            run(plans[size], home, extra)  # the engine started, the specs read, the first read done
    results: dict[str, Any] = {"load_before": os.getloadavg()[0], "sizes": {}}
    for size in sizes:
        raw: dict[str, list[float]] = {side: [] for side in SIDES}
        for _ in range(args.reps):
            for side, extra in SIDES.items():
                raw[side].append(run(plans[size], home, extra))
        medians = {side: statistics.median(values) for side, values in raw.items()}
        results["sizes"][str(size)] = {
            "raw_s": raw,
            "median_s": medians,
            "ratio": medians["reuse"] / medians["no_reuse"],
        }
        print(
            f"{size} tables: reuse {medians['reuse']:.2f} s, no reuse {medians['no_reuse']:.2f} s, "
            f"ratio {medians['reuse'] / medians['no_reuse']:.2f}x",
            flush=True,
        )
    results["load_after"] = os.getloadavg()[0]
    subprocess.run(
        [PY, "-m", "delta_sync", "engine", "stop"], cwd=home, env={**os.environ, "DELTA_SYNC_HOME": str(home)}
    )
    args.out.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()

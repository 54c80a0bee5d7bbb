"""`delta-sync check` of the example project vs the same checks written by hand in PySpark, side by side.

    python bench/check_example.py [--reps 3] [--out bench/results_check_example.json]

Copies the shipped specs/shop into a throwaway project, declares keys on three of its tables (customers,
products, order_items with a foreign key to products), applies them, writes a few rows, then times each side
as a whole process (what a scheduled job pays): `delta-sync check` and a PySpark script that starts the same
session and runs the same counts (groupBy per primary key with the NULL-key rows, an anti join for the
foreign key). Medians of --reps, alternating sides.
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

ROOT = Path(__file__).resolve().parents[1]
KEYS = {
    "customers.yaml": "primary_key: [customer_id]\n",
    "products.yaml": "primary_key: [sku]\n",
    "order_items.yaml": "primary_key: [order_id, line_no]\n"
    "foreign_keys:\n  - columns: [sku]\n    references: shop.products(sku)\n",
}
ROWS = [
    "INSERT INTO shop.customers VALUES (1, 'a@x', 'A', 'DE', current_timestamp()),"
    " (2, 'b@x', 'B', NULL, current_timestamp())",
    "INSERT INTO shop.products (sku, name, category, list_price) VALUES ('A-1', 'Mug', 'kitchen', 4.00)",
    "INSERT INTO shop.order_items (order_id, line_no, sku, quantity, unit_price) VALUES (1, 1, 'A-1', 1, 4.00),"
    " (1, 2, 'A-1', 2, 4.00)",
]
HAND = """
import sys
from pathlib import Path
sys.path.insert(0, BENCH)
from baseline_session import hand_session
spark = hand_session(Path(sys.argv[1]))
pk = [("shop.customers", ["customer_id"]), ("shop.products", ["sku"]), ("shop.order_items", ["order_id", "line_no"])]
bad = 0
for table, cols in pk:
    df = spark.table(table)
    bad += df.groupBy(*cols).count().filter("count > 1").count()
    bad += df.filter(" OR ".join(f"{c} IS NULL" for c in cols)).count()
items, products = spark.table("shop.order_items"), spark.table("shop.products")
bad += items.filter("sku IS NOT NULL").join(products.select("sku").distinct(), "sku", "left_anti").count()
print(bad)
"""


def run(command: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, subprocess.CompletedProcess[str]]:
    started = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    return time.perf_counter() - started, done


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results_check_example.json")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="ds-check-"))
    shutil.copytree(ROOT / "specs", work / "specs")
    for name, text in KEYS.items():
        path = work / "specs" / "shop" / name
        path.write_text(path.read_text() + text)
    home = work / "home"
    env = {**os.environ, "DELTA_SYNC_HOME": str(home), "COLUMNS": "200"}
    ds = [sys.executable, "-m", "delta_sync"]
    for step in (["apply", "specs", "--yes"], *(["sql", "--yes", row] for row in ROWS)):
        _t, done = run(ds + step, work, env)
        if done.returncode != 0:
            sys.exit(f"set-up failed: {' '.join(step)}\n{done.stderr}")
    hand = work / "hand.py"
    hand.write_text(HAND.replace("BENCH", repr(str(ROOT / "bench"))))
    times: dict[str, list[float]] = {"delta-sync check": [], "by hand": []}
    for _ in range(args.reps):
        took, done = run([*ds, "check", "specs"], work, env)
        assert done.returncode == 0, done.stdout + done.stderr
        times["delta-sync check"].append(took)
        took, done = run([sys.executable, str(hand), str(home)], work, env)
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip().splitlines()[-1] == "0", done.stdout  # the same verdict: every key holds
        times["by hand"].append(took)
    medians = {side: statistics.median(values) for side, values in times.items()}
    result = {
        "what": "check of the example project (3 primary keys, 1 foreign key), whole process each",
        "raw_s": times,
        "median_s": medians,
        "ratio": medians["delta-sync check"] / medians["by hand"],
        "load_before": os.getloadavg(),
    }
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

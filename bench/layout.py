"""The package's shape and start-up, this checkout beside a baseline commit, in one run.

python bench/layout.py [--baseline REF] [--reps 9] [--out bench/results_layout.json]

For each side: modules and lines per folder, the largest module, `python -X importtime -c "import delta_sync"`
(its total, microseconds), and the wall time of `delta-sync --help` and of `delta-sync validate specs` on
the example, each run as its own process, the two sides taking turns. The baseline is checked out with
`git worktree` into a temporary folder and put first on PYTHONPATH, so both run on this virtualenv.
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
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def shape(root: Path) -> dict[str, Any]:
    folders: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    largest = ("", 0)
    for path in sorted((root / "delta_sync").rglob("*.py")):
        lines = len(path.read_text().splitlines())
        folder = str(path.parent.relative_to(root))
        folders[folder][0] += 1
        folders[folder][1] += lines
        if lines > largest[1]:
            largest = (str(path.relative_to(root)), lines)
    over = sum(1 for p in (root / "delta_sync").rglob("*.py") if len(p.read_text().splitlines()) > 500)
    return {
        "folders": {k: {"modules": v[0], "lines": v[1]} for k, v in sorted(folders.items())},
        "modules": sum(v[0] for v in folders.values()),
        "lines": sum(v[1] for v in folders.values()),
        "largest": {"module": largest[0], "lines": largest[1]},
        "over_500": over,
    }


def _env(root: Path) -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=str(root), DELTA_SYNC_NO_ENGINE="1", CI="true")
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def import_total(root: Path) -> int:
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import delta_sync"], env=_env(root), capture_output=True, text=True
    )
    last = [line for line in done.stderr.splitlines() if line.rstrip().endswith("| delta_sync")][-1]
    return int(last.split("|")[1])


def wall(root: Path, *args: str) -> float:
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "delta_sync", *args], env=_env(root), cwd=root, capture_output=True, check=True
    )
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--baseline", default="HEAD~1")
    parser.add_argument("--reps", type=int, default=9)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp) / "baseline"
        subprocess.run(["git", "worktree", "add", "-q", "--detach", str(base), args.baseline], cwd=ROOT, check=True)
        try:
            sides = {"baseline": base, "this": ROOT}
            for root in sides.values():  # warm the bytecode caches: the first run of each side is not timed
                import_total(root), wall(root, "--help"), wall(root, "validate", "specs")
            runs: dict[str, dict[str, list[float]]] = {s: defaultdict(list) for s in sides}
            for _ in range(args.reps):
                for side, root in sides.items():
                    runs[side]["import_us"].append(import_total(root))
                    runs[side]["help_s"].append(wall(root, "--help"))
                    runs[side]["validate_s"].append(wall(root, "validate", "specs"))
            result: dict[str, Any] = {"baseline": args.baseline, "reps": args.reps}
            for side, root in sides.items():
                result[side] = shape(root) | {k: statistics.median(v) for k, v in runs[side].items()}
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(base)], cwd=ROOT, check=False)
    for key in ("import_us", "help_s", "validate_s"):
        b, t = result["baseline"][key], result["this"][key]
        print(f"{key:12} baseline {b:10.3f}  this {t:10.3f}  ratio {t / b:5.2f}")
    for side in ("baseline", "this"):
        r = result[side]
        print(f"{side}: {r['modules']} modules, {r['lines']} lines, largest {r['largest']}, {r['over_500']} over 500")
        for folder, f in r["folders"].items():
            print(f"  {folder:28} {f['modules']:3} modules {f['lines']:6} lines")
    if args.out:
        args.out.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

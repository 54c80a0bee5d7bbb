"""The memory checkpoints of an engine soak (bench/engine_soak.py --memory-every N) as a Markdown table, for
BENCHMARKS.md: one column per checkpoint, one row per figure, and its slope over the last 4,000 commands.

python bench/memory_soak_table.py bench/engine_soak_memory.json [--nmt-all]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

ROWS = (
    ("VmRSS_mb", "JVM RSS, MB"),
    ("RssAnon_mb", "of it anonymous, MB"),
    ("heap_committed_mb", "heap committed, MB"),
    ("heap_used_mb", "heap used, MB"),
    ("threads", "threads"),
    ("loadedClasses", "classes loaded (total)"),
    ("unloadedClasses", "classes unloaded (total)"),
    ("arena_heaps", "glibc malloc arena heaps"),
    ("arena_rss_mb", "their RSS, MB"),
)
# NMT categories shown unless --nmt-all (the others stay under 10 MB and flat)
NMT_SHOWN = ("Java Heap", "Class", "Thread", "Code", "GC", "Internal", "Other", "Symbol", "Metaspace", "Arena Chunk")


def fmt(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:,.1f}"
    return f"{value:,}"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("results", type=Path)
    parser.add_argument("--nmt-all", action="store_true")
    args = parser.parse_args()
    results = json.loads(args.results.read_text())
    memory = results["summary"]["memory"]
    points = [c for c in results["memory"] if "jvm" in c]
    keys = ["idle" if c["phase"] == "idle" else str(c["commands_done"]) for c in points]
    window = memory["window"]
    print(f"| figure | {' | '.join(keys)} | per 1,000 commands, {window[0]}-{window[1]} |")
    print("|---" * (len(keys) + 2) + "|")

    def row(label: str, series: dict[str, Any]) -> None:
        cells = [fmt(series["values"].get(k)) for k in keys]
        print(f"| {label} | {' | '.join(cells)} | {fmt(series['per_1000'])} |")

    for key, label in ROWS:
        row(label, memory["figures"][key])
    row("engine (Python) RSS, MB", memory["figures"]["engine_rss_mb"])
    if "nmt_total" in memory:
        row("NMT: committed, MB", memory["nmt_total"])
        row("NMT: through malloc, MB", memory["nmt_malloc"])
        for name, series in memory["nmt_committed"].items():
            if args.nmt_all or name in NMT_SHOWN:
                row(f"NMT {name}, MB", series)
    print()
    print("load average (1 min) at each checkpoint:", ", ".join(fmt(c["loadavg1"]) for c in points))
    trim = results.get("trim")
    if trim:
        print(f"System.trim_native_heap at the end: {trim['rss_before_mb']} -> {trim['rss_after_mb']} MB")


if __name__ == "__main__":
    main()

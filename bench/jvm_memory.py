"""Where a JVM's memory is, from outside it: what bench/engine_soak.py records at its memory checkpoints.

- /proc/<pid>/status: resident memory (VmRSS, and its anonymous / file-backed parts), its peak, the threads;
- /proc/<pid>/smaps: the glibc malloc arenas' heaps (64 MB-aligned anonymous blocks of 64 MB, the non-main
  arenas' reservations) and how much of them is resident: native memory malloc keeps, whoever asked for it;
- `jcmd <pid> GC.heap_info`: the Java heap's committed and used sizes, Metaspace's;
- `jcmd <pid> PerfCounter.print`: classes loaded and unloaded, live threads, JIT compilations;
- `jcmd <pid> Thread.print`: the threads by name (pools: `shuffle-exchange-N`, ...);
- `jcmd <pid> VM.native_memory summary` when the JVM runs with -XX:NativeMemoryTracking=summary: what the JVM
  itself committed, by category (Java Heap, Class, Thread, Code, GC, Compiler, Internal, Other, Symbol, Arena
  Chunk, ...), with the part of it taken through malloc; `baseline` and `summary.diff` against it.

Every figure in MB (one decimal). jcmd runs with this process's environment: the JVM options given to the
engine (JDK_JAVA_OPTIONS) are not its own.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

JCMD_TIMEOUT = 120.0
ARENA = 64 * 2**20  # glibc's HEAP_MAX_SIZE on 64-bit: each non-main arena's heap is one such aligned block

_STATUS = ("VmRSS", "VmHWM", "RssAnon", "RssFile", "RssShmem", "VmSize")
_NMT_CATEGORY = re.compile(
    r"^-\s+(?P<name>.+?) \(reserved=(?P<reserved>\d+)KB(?: [+-]\d+KB)?, committed=(?P<committed>\d+)KB"
)
_NMT_TOTAL = re.compile(r"^Total: reserved=(?P<reserved>\d+)KB(?: [+-]\d+KB)?, committed=(?P<committed>\d+)KB")
_NMT_MALLOC = re.compile(r"\(malloc=(?P<kb>\d+)KB")
_NMT_COUNT = re.compile(r"\((?P<what>classes|thread) #(?P<n>\d+)")
_NMT_DIFF = re.compile(r"committed=(?P<committed>\d+)KB(?: (?P<delta>[+-]\d+)KB)?")
_HEAP = re.compile(r"heap\s+total (?P<total>\d+)K, used (?P<used>\d+)K")
_META = re.compile(r"Metaspace\s+used (?P<used>\d+)K, committed (?P<committed>\d+)K")
_PERF = (
    "java.cls.loadedClasses",
    "java.cls.unloadedClasses",
    "java.cls.sharedLoadedClasses",
    "java.threads.live",
    "java.threads.started",
    "sun.ci.totalCompiles",
)


def mb(kb: int | float) -> float:
    return round(kb / 1024, 1)


def jcmd(pid: int, *command: str) -> str:
    """One diagnostic command's output ('' when jcmd is missing or the JVM does not answer)."""
    tool = shutil.which("jcmd")
    if tool is None:
        return ""
    try:
        done = subprocess.run(
            [tool, str(pid), *command], capture_output=True, text=True, timeout=JCMD_TIMEOUT, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return done.stdout if done.returncode == 0 else ""


def proc_status(pid: int) -> dict[str, Any]:
    figures: dict[str, Any] = {}
    try:
        lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    except OSError:
        return figures
    for line in lines:
        key, _sep, value = line.partition(":")
        if key in _STATUS:
            figures[f"{key}_mb"] = mb(int(value.split()[0]))
        elif key == "Threads":
            figures["threads"] = int(value.split()[0])
    return figures


def malloc_arenas(pid: int, exclude: tuple[int, int] | None = None) -> dict[str, Any]:
    """The non-main glibc arenas' heaps: blocks of 64 MB at 64 MB-aligned addresses, anonymous, starting
    read-write (the rest reserved, ---p); their count and resident size. `exclude`: the Java heap's range."""
    try:
        text = Path(f"/proc/{pid}/smaps").read_text()
    except OSError:
        return {}
    maps: list[tuple[int, int, str, bool, int]] = []  # start, end, perms, anonymous, rss kB
    for line in text.splitlines():
        head = line.split()
        if head and "-" in head[0] and len(head) >= 5 and not head[0].endswith(":"):
            low, _sep, high = head[0].partition("-")
            try:
                maps.append((int(low, 16), int(high, 16), head[1], len(head) == 5, 0))
            except ValueError:
                continue
        elif head and head[0] == "Rss:" and maps:
            s, e, p, a, _r = maps[-1]
            maps[-1] = (s, e, p, a, int(head[1]))
    heaps, resident = 0, 0
    for index, (start, _end, perms, anonymous, _rss) in enumerate(maps):
        if not anonymous or start % ARENA or not perms.startswith("rw"):
            continue
        if exclude is not None and exclude[0] <= start < exclude[1]:
            continue
        limit, cursor, rss, following = start + ARENA, start, 0, index
        while following < len(maps) and maps[following][0] == cursor and maps[following][3] and cursor < limit:
            cursor = maps[following][1]
            rss += maps[following][4]
            following += 1
        if cursor == limit:
            heaps += 1
            resident += rss
    return {"arena_heaps": heaps, "arena_rss_mb": mb(resident)}


def heap_info(pid: int) -> dict[str, Any]:
    text = jcmd(pid, "GC.heap_info")
    figures: dict[str, Any] = {}
    if found := _HEAP.search(text):
        figures["heap_committed_mb"] = mb(int(found["total"]))
        figures["heap_used_mb"] = mb(int(found["used"]))
    if found := _META.search(text):
        figures["metaspace_used_mb"] = mb(int(found["used"]))
        figures["metaspace_committed_mb"] = mb(int(found["committed"]))
    if found := re.search(r"\[0x([0-9a-f]+), 0x([0-9a-f]+)\)", text):
        figures["_heap_range"] = (int(found[1], 16), int(found[2], 16))
    return figures


def perf_counters(pid: int) -> dict[str, Any]:
    figures: dict[str, Any] = {}
    for line in jcmd(pid, "PerfCounter.print").splitlines():
        key, _sep, value = line.partition("=")
        if key in _PERF:
            try:
                figures[key.rsplit(".", 1)[1]] = int(value.strip().strip('"'))
            except ValueError:
                continue
    return figures


def thread_groups(pid: int, most: int = 12) -> dict[str, int]:
    """The JVM's threads by name, digits folded (`shuffle-exchange-N`): the most numerous first."""
    names: dict[str, int] = {}
    for line in jcmd(pid, "Thread.print").splitlines():
        if line.startswith('"'):
            name = re.sub(r"\d+", "N", line[1:].split('"', 1)[0])
            names[name] = names.get(name, 0) + 1
    return dict(sorted(names.items(), key=lambda item: -item[1])[:most])


def nmt_summary(pid: int) -> dict[str, Any]:
    """NMT's committed MB by category, the malloc part of each, and the totals ({} without NMT)."""
    text = jcmd(pid, "VM.native_memory", "summary")
    if "Native Memory Tracking" not in text:
        return {}
    committed: dict[str, float] = {}
    malloc: dict[str, float] = {}
    counts: dict[str, int] = {}
    category: str | None = None
    total: dict[str, float] = {}
    for line in text.splitlines():
        stripped = line.strip()
        if found := _NMT_TOTAL.match(stripped):
            total = {"reserved_mb": mb(int(found["reserved"])), "committed_mb": mb(int(found["committed"]))}
            continue
        if found := _NMT_CATEGORY.match(stripped):
            category = found["name"].strip()
            committed[category] = mb(int(found["committed"]))
            continue
        if category is None:
            continue
        if found := _NMT_MALLOC.search(stripped):
            malloc[category] = mb(int(found["kb"]))
        if found := _NMT_COUNT.search(stripped):
            counts[found["what"]] = int(found["n"])
    return {
        "total_committed_mb": total.get("committed_mb"),
        "malloc_mb": round(sum(malloc.values()), 1),
        "committed": committed,
        "malloc": malloc,
        "counts": counts,
    }


def nmt_baseline(pid: int) -> str:
    """A baseline for `summary.diff`: jcmd's answer ('' when it failed)."""
    return jcmd(pid, "VM.native_memory", "baseline").strip()


def nmt_diff(pid: int) -> tuple[str, dict[str, float]]:
    """`summary.diff` against the baseline: its text, and each category's committed change in MB."""
    text = jcmd(pid, "VM.native_memory", "summary.diff")
    deltas: dict[str, float] = {}
    for line in text.splitlines():
        stripped = line.strip()
        name = None
        if stripped.startswith("Total:"):
            name = "Total"
        elif found := re.match(r"^-\s+(?P<name>.+?) \(", stripped):
            name = found["name"].strip()
        if name is None:
            continue
        if (found := _NMT_DIFF.search(stripped)) and found["delta"]:
            deltas[name] = mb(int(found["delta"]))
        else:
            deltas.setdefault(name, 0.0)
    return text, deltas


def probe(pid: int, nmt: bool) -> dict[str, Any]:
    """Every figure of the JVM `pid` now."""
    started = time.perf_counter()
    figures: dict[str, Any] = proc_status(pid)
    heap = heap_info(pid)
    heap_range = heap.pop("_heap_range", None)
    figures |= heap
    figures |= perf_counters(pid)
    figures |= malloc_arenas(pid, heap_range)
    figures["thread_groups"] = thread_groups(pid)
    if nmt:
        figures["nmt"] = nmt_summary(pid)
    figures["probe_s"] = round(time.perf_counter() - started, 1)
    return figures


def trim(pid: int) -> dict[str, Any]:
    """RSS before and after `System.trim_native_heap` (glibc's malloc_trim: the free memory malloc kept, given
    back): how much of the resident memory is free malloc memory."""
    before = proc_status(pid).get("VmRSS_mb")
    text = jcmd(pid, "System.trim_native_heap")
    time.sleep(1.0)
    after = proc_status(pid).get("VmRSS_mb")
    return {"rss_before_mb": before, "rss_after_mb": after, "jcmd": text.strip().splitlines()[-1:] if text else []}

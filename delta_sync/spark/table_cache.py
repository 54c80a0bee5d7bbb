"""What delta-sync read of each Delta table, kept by the table's folder and latest commit, so that a plan reads
again only the tables whose Delta version moved.

What it holds:
- `TableCache`: the facts (`delta_log.TableFacts`) of each table folder with the commit they were read at
  (`delta_log.LogCommit`'s key: version, size, modification time and inode of the commit file, or its ETag on
  object storage). A hit needs the same commit, so a version that moved, or a table dropped and created again at
  the same path, is read again. A folder on local disk is kept under its path, one on S3 under
  `remote_log.RemoteLocation.key` (`s3://bucket/path`, whether the catalog spells it `s3a://` or `s3://`).
- `for_home`: one cache per local catalog folder, kept in memory for the life of the process (a library caller's
  session, or one command) and on disk as `<home>/cache/tables.json` (the environment's `.delta-sync/<env>/`).
  A session without a local catalog (spark-submit's driver, a caller's own session) keeps it in memory only.

The file holds delta-sync's version: a cache written by another version is ignored, so a reader that changes
what it reads never trusts an older one's facts. Writing is atomic (a temporary file renamed over the old one);
a process that loses a race to write loses nothing but cache entries. Clearing it is deleting the file.
Nothing here imports Spark.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from delta_sync.spark.delta_log import LogCommit, TableFacts
from delta_sync.version import __version__

CACHE_FILE = Path("cache") / "tables.json"
# Bumped when the file's layout changes within one delta-sync version (development builds).
CACHE_FORMAT = 1
# The fields of `LogCommit.key()`.
LOG_COMMIT_KEY = ("version", "size", "mtime_ns", "inode")


@dataclass
class TableCache:
    """The cached facts of table folders (their resolved paths, or their keys on object storage), each with the
    commit key it was read at."""

    path: Path | None
    entries: dict[str, tuple[list[int], TableFacts]] = field(default_factory=dict)
    changed: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def get(self, folder: Path | str, commit: LogCommit) -> TableFacts | None:
        found = self.entries.get(str(folder))
        return found[1] if found is not None and found[0] == commit.key() else None

    def cached_commit(self, folder: Path | str) -> LogCommit | None:
        """The commit the facts of `folder` were read at, if any (the remote reader lists from its version on)."""
        found = self.entries.get(str(folder))
        if found is None or len(found[0]) != len(LOG_COMMIT_KEY):
            return None
        version, size, mtime_ns, inode = found[0]
        return LogCommit(version, size, mtime_ns, inode, has_checksum=False)

    def drop(self, folder: Path | str) -> None:
        """Forgets a table whose log is gone (object storage, where `save` cannot look)."""
        with self.lock:
            if self.entries.pop(str(folder), None) is not None:
                self.changed = True

    def put(self, folder: Path | str, commit: LogCommit, facts: TableFacts) -> None:
        # Only facts of the very commit listed: a table that moved between the listing and the read is read
        # again next time rather than kept under a key it does not match.
        if facts.version != commit.version:
            return
        with self.lock:
            self.entries[str(folder)] = (commit.key(), facts)
            self.changed = True

    def save(self) -> None:
        """Writes the cache to its file when it changed; the tables whose log is gone are left out."""
        with self.lock:
            if self.path is None or not self.changed:
                return
            self.changed = False
            # A folder on object storage is not looked at here (a request each): the reader drops those it finds gone.
            kept = {k: v for k, v in self.entries.items() if _remote(k) or os.path.isdir(os.path.join(k, "_delta_log"))}
            self.entries = kept
            data = {
                "delta_sync": __version__,
                "format": CACHE_FORMAT,
                "tables": {k: {"commit": key, "facts": facts.encode()} for k, (key, facts) in sorted(kept.items())},
            }
        # A cache is an optimisation: a folder that cannot be written costs the next plan its reads, nothing else.
        with contextlib.suppress(OSError):
            self.path.parent.mkdir(parents=True, exist_ok=True)
            partial = self.path.with_name(f".{self.path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
            try:
                partial.write_text(json.dumps(data, separators=(",", ":")))
                os.replace(partial, self.path)
            finally:
                partial.unlink(missing_ok=True)


def _remote(key: str) -> bool:
    return "://" in key


def load(path: Path) -> dict[str, tuple[list[int], TableFacts]]:
    """The entries of the cache file at `path`; none when it is missing, unreadable, or another version's."""
    try:
        data = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get("delta_sync") != __version__ or data.get("format") != CACHE_FORMAT:
        return {}
    entries: dict[str, tuple[list[int], TableFacts]] = {}
    tables: Any = data.get("tables")
    for folder, entry in (tables if isinstance(tables, dict) else {}).items():
        try:
            key = [int(k) for k in entry["commit"]]
            entries[str(folder)] = (key, TableFacts.decode(entry["facts"]))
        except (KeyError, TypeError, ValueError):
            continue  # an entry this version cannot read is read again from the table
    return entries


_caches: dict[Path | None, TableCache] = {}
_caches_lock = threading.Lock()


def for_home(home: Path | None) -> TableCache:
    """The cache of the local catalog in `home` (None: a session without one, kept in memory only). Loaded from
    disk once per process, then kept in memory: a library caller planning again on its session reads nothing."""
    with _caches_lock:
        cache = _caches.get(home)
        if cache is None:
            path = None if home is None else home / CACHE_FILE
            cache = TableCache(path, load(path) if path is not None else {})
            _caches[home] = cache
        return cache


def forget() -> None:
    """Drops the caches held in memory (tests; the files stay)."""
    with _caches_lock:
        _caches.clear()

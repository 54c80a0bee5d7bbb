"""Spec files in one canonical layout, their comments kept (`delta-sync fmt`). Pure but for the file I/O.

The layout:

- top-level keys in the order the README documents them: table, comment, columns, checks, primary_key,
  foreign_keys, partitioned_by, clustered_by, properties; keys the spec format does not know (the loader
  reports them) follow in their own order, so nothing is dropped;
- each column's keys in the order of the column model (name, type, nullable, comment, default, generated,
  identity, renamed_from, backfill, using), identity's as start, step, always, a primary key's as name,
  columns and a foreign key's as columns, references, name; checks and properties keep the user's order;
- column types spelled as the loader canonicalises them (`BIGINT` -> `bigint`, `decimal(10, 2)` ->
  `decimal(10,2)`), unless the type does not parse or holds a `$` (a `${var}`): those are left as written;
- two-space indentation, sequences indented under their key (`  - name: id`), no line wrapping; flow
  collections (`[a, b]`, `{name: a, type: int}`) stay flow; every scalar keeps its quoting style (and a
  plain number, boolean, null or date its spelling); a new type spelling is quoted only if it must be;
- comments kept, each with what it is about, wherever its key moves: an end-of-line comment with the last
  key (or list item) that starts before it on its line, at its column; full-line comments (and one blank
  line of each run) with the key or list item below them. The comments that start the file are its header
  and stay on top, whichever key comes first now: down to the last blank line above the first key (what
  follows that blank line is the first key's), or all of them when no blank line separates them from it.
  Comments after the last key stay at the end. Comments inside a multi-line flow collection move above the
  key that holds it.

The file is read as the loader reads it (PyYAML) for problems and lines, and rewritten with ruamel.yaml's
round-trip mode. Before the new text is returned, it is read back and compared with the old: the same data
(types canonical, key order aside) and the same comments, or a SpecError says the file was left alone.
"""

from __future__ import annotations

import contextlib
import io
import os
import stat
import tempfile
from pathlib import Path

from delta_sync.model.errors import DeltaSyncError
from delta_sync.specs import yamldoc
from delta_sync.specs.fmt_comments import _Anchors, _assign, _attach, _Mismatch, _strip_comments
from delta_sync.specs.fmt_layout import _canonicalise, _check_unchanged
from delta_sync.specs.fmt_yaml import _BUG, _problem, _read_yaml, _round_trip_load, _yaml


def format_text(text: str, source: str = "<spec>") -> str:
    """The canonical text of one spec file; SpecError (at `source`:line) if it cannot be read as a YAML
    mapping, or if rewriting it would change its data or lose a comment."""
    # libyaml's marks do not count a byte order mark, the text's indexes do: without it they agree (the
    # text written never had one: ruamel.yaml leaves it out).
    text = text.removeprefix("\ufeff")
    before = _read_yaml(text, source)
    data = _round_trip_load(before.spaced, source)
    anchors = _Anchors()
    try:
        anchors.walk_map(before.root, data)
    except _Mismatch as exc:
        raise _problem(source, exc.line, "fmt reads this entry differently from the loader", _BUG) from None
    header, end = _assign(anchors.found, before.remarks, before.root)
    _canonicalise(data)
    _strip_comments(data)
    _attach(data, anchors, header, end)
    stream = io.StringIO()
    _yaml().dump(data, stream)
    formatted = stream.getvalue()
    _check_unchanged(before, _read_yaml(formatted, source), source)
    return formatted


def format_file(path: Path) -> bool:
    """Rewrite `path` in its canonical layout if it is not already; whether it changed.

    The new text replaces the file at once (a temporary file renamed over it), with the file's mode."""
    text, source = _read_file(path)
    formatted = format_text(text, source)
    if formatted == text:
        return False
    _write_file(path, formatted, source)
    return True


def needs_format(path: Path) -> bool:
    """Whether format_file would change `path` (`fmt --check`)."""
    text, source = _read_file(path)
    return format_text(text, source) != text


def _read_file(path: Path) -> tuple[str, str]:
    """The file's text and its name in problems, read as the loader reads it."""
    source = yamldoc.shown_path(path)
    try:
        with path.open("rb") as stream:
            raw = stream.read(yamldoc.MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise _problem(source, 0, f"cannot read the file: {exc.strerror or exc}") from None
    if len(raw) > yamldoc.MAX_FILE_BYTES:
        raise _problem(source, 1, "file is larger than 1 MiB", "declare one table per file")
    try:
        return raw.decode("utf-8"), source
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise _problem(source, line, f"file is not UTF-8 (byte {raw[exc.start]:#04x})", "save it as UTF-8") from None


def _write_file(path: Path, text: str, source: str) -> None:
    target = Path(os.path.realpath(path))  # a symlinked spec stays a link
    try:
        mode = stat.S_IMODE(target.stat().st_mode)
        # (not *.yaml: a temporary file a crash leaves behind is never read as a spec)
        fd, temporary = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".fmt", dir=target.parent)
    except OSError as exc:
        raise DeltaSyncError(f"{source}: cannot rewrite the file: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as stream:
            stream.write(text)
            stream.flush()
            os.fsync(stream.fileno())
        os.chmod(temporary, mode)
        os.replace(temporary, target)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        if isinstance(exc, OSError):
            raise DeltaSyncError(f"{source}: cannot rewrite the file: {exc.strerror or exc}") from None
        raise

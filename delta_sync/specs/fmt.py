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

import bisect
import contextlib
import io
import os
import re
import stat
import sys
import tempfile
import warnings
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from ruamel.yaml import YAML
from ruamel.yaml.comments import Comment, CommentedMap, CommentedSeq
from ruamel.yaml.emitter import RoundTripEmitter
from ruamel.yaml.error import CommentMark
from ruamel.yaml.error import YAMLError as RuamelYAMLError
from ruamel.yaml.events import MappingEndEvent
from ruamel.yaml.nodes import ScalarNode as RuamelScalarNode
from ruamel.yaml.representer import RoundTripRepresenter
from ruamel.yaml.scalarstring import FoldedScalarString, LiteralScalarString, ScalarString
from ruamel.yaml.tokens import CommentToken

from delta_sync.model.errors import DeltaSyncError, SpecError, SpecProblem
from delta_sync.specs import yamldoc
from delta_sync.specs.spec import ColumnSpec, ForeignKeySpec, IdentitySpec, PrimaryKeySpec
from delta_sync.sql import types as sqltypes

# The README's order ("The spec format"): what the table is, its columns and rules, then its layout and
# properties. TableSpec declares the same keys (tests hold the two together) in another order.
TABLE_KEYS = (
    "table",
    "renamed_from",
    "comment",
    "location",
    "columns",
    "checks",
    "primary_key",
    "foreign_keys",
    "partitioned_by",
    "clustered_by",
    "properties",
)
VIEW_KEYS = ("view", "comment", "sql", "columns", "drop")
COLUMN_KEYS = tuple(ColumnSpec.model_fields)
IDENTITY_KEYS = tuple(IdentitySpec.model_fields)
PRIMARY_KEY_KEYS = tuple(PrimaryKeySpec.model_fields)
FOREIGN_KEY_KEYS = tuple(ForeignKeySpec.model_fields)

_WIDTH = 1 << 30  # never wrap a line
_LAYOUT = "start with `table: schema.table` and `columns:`; `delta-sync schema` shows the format"
_BUG = "the file is left as it is; this is a bug of delta-sync fmt, please report it"
# YAML's line breaks, as PyYAML counts lines.
_BREAK = re.compile(r"\r\n|[\r\n\x85\u2028\u2029]")
_BLOCK_HEADER = re.compile(r"[|>][0-9+-]*[ \t]+(#)")
_STR = "tag:yaml.org,2002:str"
_MAP = "tag:yaml.org,2002:map"
_SEQ = "tag:yaml.org,2002:seq"
_MERGE = "tag:yaml.org,2002:merge"


# --- the API ----------------------------------------------------------------------------------------


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


# --- reading ----------------------------------------------------------------------------------------


def _problem(source: str, line: int, message: str, hint: str = "") -> SpecError:
    return SpecError([SpecProblem(source, line, message, hint)])


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


@dataclass(frozen=True, slots=True)
class _Remark:
    """A comment, or a blank line, of the file."""

    line: int  # 0-based, as marks count
    column: int
    text: str  # `# ...` without trailing blanks; "" for a blank line
    end_of_line: bool  # after something else on its line
    in_flow: bool  # inside a [...] or {...}


@dataclass(frozen=True, slots=True)
class _Read:
    """A text as the loader reads it: the node tree (with lines) and its comments; and the same text with
    the tabs that separate tokens as spaces, for ruamel.yaml (libyaml accepts them, ruamel.yaml does not;
    a space for a tab moves nothing)."""

    root: yaml.MappingNode
    remarks: list[_Remark]
    spaced: str


def _read_yaml(text: str, source: str) -> _Read:
    """`text` read by the loader's own parser (libyaml when there), whose marks count characters."""
    try:
        yamldoc._scan_events(text)  # anchors and nesting depth, refused as the loader refuses them
        loader = yamldoc._Loader(text)
        try:
            root = loader.get_single_node()
        finally:
            loader.dispose()
        tokens = list(yaml.scan(text, Loader=yamldoc._Loader))
    except yamldoc.Unusable as exc:
        raise _problem(source, *exc.args) from None
    except yaml.YAMLError as exc:
        raise _problem(source, *yamldoc._yaml_error(exc, text)) from None
    if root is None:
        raise _problem(source, 1, "file is empty", "a spec needs at least table: and columns:")
    if not isinstance(root, yaml.MappingNode):
        kind = root.tag.rsplit(":", 1)[-1].replace("seq", "list").replace("str", "string")
        raise _problem(source, root.start_mark.line + 1, f"top level must be a mapping, got {kind}", _LAYOUT)
    _check_nodes(root, source)
    remarks, spaced = _remarks(text, tokens)
    return _Read(root, remarks, spaced)


def _check_nodes(node: yaml.Node, source: str) -> None:
    """What the loader refuses and a rewrite could not keep: values YAML cannot read, odd collection tags,
    keys that are not plain values, `<<` merges, keys written twice."""
    line = node.start_mark.line + 1
    if isinstance(node, yaml.ScalarNode) and node.tag != _STR:
        try:
            yaml.constructor.SafeConstructor().construct_object(node)
        except (yaml.YAMLError, ValueError, KeyError, AttributeError, TypeError, OverflowError) as exc:
            kind = node.tag.rsplit(":", 1)[-1]
            detail = str(exc).splitlines()[0][:120] if str(exc) else type(exc).__name__
            message = f"`{node.value[:60]}` cannot be read as {kind} ({detail})"
            raise _problem(source, line, message, f'quote it: "{node.value[:60]}"') from None
    elif isinstance(node, yaml.SequenceNode):
        if node.tag != _SEQ:
            raise _problem(source, line, f"unsupported YAML tag `{node.tag}`", "remove the tag")
        for item in node.value:
            _check_nodes(item, source)
    elif isinstance(node, yaml.MappingNode):
        if node.tag != _MAP:
            raise _problem(source, line, f"unsupported YAML tag `{node.tag}`", "remove the tag")
        first: dict[tuple[str, str], int] = {}
        for key, value in node.value:
            line = key.start_mark.line + 1
            if not isinstance(key, yaml.ScalarNode):
                raise _problem(source, line, "a key must be plain text, not a list or mapping", _LAYOUT)
            if key.tag == _MERGE:
                raise _problem(source, line, "`<<` merge keys are not supported", "write the keys out in full")
            if (key.tag, key.value) in first:
                message = f"key `{key.value}` appears twice (first at line {first[key.tag, key.value]})"
                raise _problem(source, line, message, "keep one; YAML would silently use the last")
            first[key.tag, key.value] = line
            _check_nodes(value, source)


def _remarks(text: str, tokens: list[Any]) -> tuple[list[_Remark], str]:
    """The comments and blank lines of `text` (what lies outside every token but line breaks and blanks),
    and `text` with the tabs between tokens as spaces."""
    starts = [0]
    ends = []
    for match in _BREAK.finditer(text):
        ends.append(match.start())
        starts.append(match.end())
    ends.append(len(text))
    spans = sorted((t.start_mark.index, t.end_mark.index) for t in tokens if t.end_mark.index > t.start_mark.index)
    span_starts = [start for start, _ in spans]
    reach: list[int] = []
    for _, end in spans:
        reach.append(max(end, reach[-1]) if reach else end)
    flow_at: list[int] = []
    depth_after: list[int] = []
    depth = 0
    for token in tokens:
        if isinstance(token, yaml.FlowSequenceStartToken | yaml.FlowMappingStartToken):
            depth += 1
        elif isinstance(token, yaml.FlowSequenceEndToken | yaml.FlowMappingEndToken):
            depth -= 1
        else:
            continue
        flow_at.append(token.start_mark.index)
        depth_after.append(depth)

    # A comment after a block scalar's `|` or `>` is inside the scalar's token.
    headers = set()
    for token in tokens:
        if isinstance(token, yaml.ScalarToken) and token.style in ("|", ">"):
            start = token.start_mark.index
            header = _BLOCK_HEADER.match(text, start, ends[token.start_mark.line])
            if header is not None:
                headers.add(header.start(1))

    def covered(index: int) -> bool:
        k = bisect.bisect_right(span_starts, index) - 1
        return k >= 0 and reach[k] > index

    def in_flow(index: int) -> bool:
        k = bisect.bisect_left(flow_at, index) - 1
        return k >= 0 and depth_after[k] > 0

    found = []
    spaced = list(text) if "\t" in text else []
    for number, (start, end) in enumerate(zip(starts, ends, strict=True)):
        hash_at = text.find("#", start, end)
        while hash_at != -1 and covered(hash_at) and hash_at not in headers:
            hash_at = text.find("#", hash_at + 1, end)
        tab_at = text.find("\t", start, end if hash_at == -1 else hash_at)
        while tab_at != -1:
            if not covered(tab_at):
                spaced[tab_at] = " "
            tab_at = text.find("\t", tab_at + 1, end if hash_at == -1 else hash_at)
        if hash_at != -1:
            before = text[start:hash_at].strip(" \t\ufeff")
            remark = _Remark(number, hash_at - start, text[hash_at:end].rstrip(), bool(before), in_flow(hash_at))
            found.append(remark)
        elif start == len(text):
            break  # after the last line break
        elif not text[start:end].strip(" \t\ufeff") and not covered(start) and not in_flow(start):
            found.append(_Remark(number, 0, "", False, False))
    return found, "".join(spaced) if spaced else text


def _round_trip_load(text: str, source: str) -> CommentedMap:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            data = _yaml().load(text)
    except RuamelYAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        line = mark.line + 1 if mark is not None else 1
        reason = "; ".join(str(part) for part in (getattr(exc, "problem", None), getattr(exc, "context", None)) if part)
        message = f"invalid YAML: {reason or str(exc).splitlines()[0]}"
        hint = "check the indentation and quoting around this line"
        if "'\\t'" in reason:  # one the loader reads: a tab inside a plain value, which ruamel.yaml refuses
            message, hint = "fmt cannot read a tab inside an unquoted value", "quote the value, or use spaces"
        raise _problem(source, line, message, hint) from None
    except (ValueError, TypeError, OverflowError, KeyError, AttributeError) as exc:  # its constructors'
        hint = "quote the values that are not plain text"
        raise _problem(source, 1, f"fmt cannot read this file: {exc}", hint) from None
    if not isinstance(data, CommentedMap):
        raise _problem(source, 1, "top level must be a mapping", _LAYOUT)
    if data.fa.flow_style():
        data.fa.set_block_style()  # `{table: ..., columns: ...}`: one key a line
    return data


# --- writing ----------------------------------------------------------------------------------------


class _Verbatim(str):
    """A plain scalar written back exactly as it was written: `yes`, `0010`, `~`, `1e400` and the
    like mean different things to YAML 1.1 (the loader) and 1.2 (ruamel.yaml), but the same text
    means the same to the loader."""

    __slots__ = ()


class _Representer(RoundTripRepresenter):
    pass


def _represent_verbatim(representer: Any, data: _Verbatim) -> Any:
    # The tag ruamel.yaml reads the text as, so that it writes the text plain, untagged.
    tag = representer.dumper.resolver.resolve(RuamelScalarNode, str(data), (True, False))
    return representer.represent_scalar(tag, str(data))


_Representer.add_representer(_Verbatim, _represent_verbatim)


class _Emitter(RoundTripEmitter):
    """ruamel.yaml's, but for a flow mapping with an end-of-line comment inside a block sequence whose key
    has one too (`columns: # c` over `- {name: a, type: int} # a`): its comment ends the line, yet the
    emitter still takes the next line as begun, and writes the next item's keys on one line
    (`- name: b type: int`), which is not YAML."""

    def expect_flow_mapping_key(self) -> None:
        ends_commented = isinstance(self.event, MappingEndEvent) and bool(self.event.comment and self.event.comment[0])
        super().expect_flow_mapping_key()
        if ends_commented:
            self.no_newline = False


def _yaml() -> YAML:
    rt = YAML(typ="rt")
    rt.Representer = _Representer
    rt.Emitter = _Emitter
    rt.preserve_quotes = True
    rt.indent(mapping=2, sequence=4, offset=2)
    rt.width = _WIDTH
    rt.allow_unicode = True
    return rt


def _reorder(mapping: CommentedMap, order: Sequence[str]) -> None:
    rank = {key: i for i, key in enumerate(order)}
    keys = list(mapping)
    wanted = sorted(keys, key=lambda key: rank.get(key, len(order)) if isinstance(key, str) else len(order))
    if wanted != keys:
        for key in wanted:
            mapping.move_to_end(key)


def _canonical_type(value: Any) -> Any:
    """A column's type in the loader's spelling, as the same kind of scalar (quoted stays quoted)."""
    if not isinstance(value, str) or isinstance(value, _Verbatim) or "$" in value:
        return value
    try:
        canonical = sqltypes.parse_type(value)
    except sqltypes.TypeSyntaxError:
        return value
    if canonical == value:
        return value
    if isinstance(value, ScalarString):
        return type(value)(canonical)
    return canonical


def _canonicalise(data: CommentedMap) -> None:
    _reorder(data, VIEW_KEYS if "view" in data and "table" not in data else TABLE_KEYS)
    columns = data.get("columns")
    for column in columns if isinstance(columns, CommentedSeq) else ():
        if isinstance(column, CommentedMap):
            _reorder(column, COLUMN_KEYS)
            if "type" in column:
                column["type"] = _canonical_type(column["type"])
            identity = column.get("identity")
            if isinstance(identity, CommentedMap):
                _reorder(identity, IDENTITY_KEYS)
    primary_key = data.get("primary_key")
    if isinstance(primary_key, CommentedMap):
        _reorder(primary_key, PRIMARY_KEY_KEYS)
    foreign_keys = data.get("foreign_keys")
    for foreign_key in foreign_keys if isinstance(foreign_keys, CommentedSeq) else ():
        if isinstance(foreign_key, CommentedMap):
            _reorder(foreign_key, FOREIGN_KEY_KEYS)


# --- comments ---------------------------------------------------------------------------------------


@dataclass(eq=False)
class _Anchor:
    """A key of a block mapping or an item of a block sequence: what comments are attached to."""

    line: int
    column: int
    owner: CommentedMap | CommentedSeq
    key: Any  # the mapping key, or the item's index
    pre: list[str] = field(default_factory=list)  # full-line comments above it ("" a blank line)
    eol: tuple[str, int] | None = None  # its end-of-line comment and the column it starts at
    inner: list[str] = field(default_factory=list)  # comments that cannot stay where they are


class _Anchors:
    """The anchors in document order (their positions never decrease), walking the loader's nodes and
    ruamel.yaml's data side by side; plain non-text scalars become _Verbatim on the way."""

    def __init__(self) -> None:
        self.found: list[_Anchor] = []
        self.by_slot: dict[tuple[int, Any], _Anchor] = {}

    def add(self, node: yaml.Node, owner: CommentedMap | CommentedSeq, key: Any) -> None:
        anchor = _Anchor(node.start_mark.line, node.start_mark.column, owner, key)
        self.found.append(anchor)
        self.by_slot[id(owner), key] = anchor

    def walk_map(self, node: yaml.MappingNode, data: CommentedMap) -> None:
        if len(node.value) != len(data):
            raise _Mismatch(node)
        keys = list(data)
        written = [_verbatim(key_node, key) for (key_node, _), key in zip(node.value, keys, strict=True)]
        taken = Counter(written)
        written = [new if taken[new] == 1 else key for new, key in zip(written, keys, strict=True)]  # `1:`, `'1':`
        if written != keys:
            items = list(zip(written, data.values(), strict=True))
            data.clear()
            data.update(items)
            keys = written
        for (key_node, value_node), key in zip(node.value, keys, strict=True):
            if not node.flow_style:
                self.add(key_node, data, key)
            self.walk_value(value_node, data, key)

    def walk_value(self, node: yaml.Node, owner: CommentedMap | CommentedSeq, key: Any) -> None:
        value = owner[key]
        if isinstance(node, yaml.MappingNode):
            if not isinstance(value, CommentedMap):
                raise _Mismatch(node)
            self.walk_map(node, value)
        elif isinstance(node, yaml.SequenceNode):
            if not isinstance(value, CommentedSeq) or len(node.value) != len(value):
                raise _Mismatch(node)
            for i, item in enumerate(node.value):
                if not node.flow_style:
                    self.add(item, value, i)
                self.walk_value(item, value, i)
        elif isinstance(value, CommentedMap | CommentedSeq):
            raise _Mismatch(node)
        else:
            written = _verbatim(node, value)
            if written is not value:
                owner[key] = written


def _verbatim(node: yaml.Node, value: Any) -> Any:
    """`value` (a key or a value), or its text as written if it is a plain number, boolean, null or date:
    ruamel.yaml would write those in its own spelling."""
    if not isinstance(node, yaml.ScalarNode) or node.style or isinstance(value, str):  # plain: '' or None
        return value
    # (not `!!float 1`: an explicit tag keeps ruamel.yaml's spelling)
    return _Verbatim(node.value) if _plain_tag(node) == node.tag else value


class _Mismatch(Exception):
    """ruamel.yaml read the file into another shape than the loader did."""

    def __init__(self, node: yaml.Node) -> None:
        super().__init__(node.start_mark.line + 1)
        self.line = node.start_mark.line + 1


_RESOLVER: Any = yaml.resolver.Resolver()  # the loader's


def _plain_tag(node: yaml.ScalarNode) -> str:
    """The tag the loader gives `node`'s text written plain."""
    return str(_RESOLVER.resolve(yaml.ScalarNode, node.value, (True, False)))


def _assign(anchors: list[_Anchor], remarks: list[_Remark], root: yaml.MappingNode) -> tuple[list[str], list[str]]:
    """Each remark to the anchor it is about; returns the file's header and its end."""
    positions = [(a.line, a.column) for a in anchors]
    header: list[str] = []
    end: list[str] = []
    for remark in remarks:
        if remark.in_flow or remark.end_of_line:
            k = bisect.bisect_right(positions, (remark.line, remark.column)) - 1
            if k < 0:
                header.append(remark.text)
            elif remark.end_of_line and not remark.in_flow and anchors[k].eol is None:
                anchors[k].eol = (remark.text, remark.column)
            else:
                anchors[k].inner.append(remark.text)
            continue
        k = bisect.bisect_right(positions, (remark.line, sys.maxsize))
        if not anchors and remark.line < root.start_mark.line:
            header.append(remark.text)
        elif k == len(anchors):
            end.append(remark.text)
        else:
            anchors[k].pre.append(remark.text)
    if anchors and anchors[0].pre:
        # What starts the file is read as its header (`# Owned by the sales team`), which must not follow the
        # first key down the file when keys move. Only a blank line can tell a comment about the first key
        # apart from it: below the header's last blank line, a comment is the key's.
        pre = anchors[0].pre
        cut = len(pre) - pre[::-1].index("") if "" in pre else len(pre)
        header = [*header, *pre[:cut]]
        anchors[0].pre = pre[cut:]
    return header, end


def _strip_comments(value: Any) -> None:
    if isinstance(value, CommentedMap | CommentedSeq):
        setattr(value, Comment.attrib, Comment())
        for item in value.values() if isinstance(value, CommentedMap) else value:
            _strip_comments(item)
    elif isinstance(value, LiteralScalarString | FoldedScalarString):
        block: Any = value
        block.comment = None  # the comment after its `|` or `>`: a remark like the others


def _tidy(lines: list[str], *, first: bool) -> list[str]:
    """Runs of blank lines as one; none on top of a collection's first entry (or of the file)."""
    tidy: list[str] = []
    for text in lines:
        if text or (tidy and tidy[-1]) or (not tidy and not first):
            tidy.append(text)
    return tidy


def _tokens(lines: list[str], column: int) -> list[CommentToken] | None:
    tokens = [CommentToken(f"{text}\n", CommentMark(column if text else 0)) for text in lines]
    return tokens or None


def _is_block(value: Any) -> bool:
    return isinstance(value, CommentedMap | CommentedSeq) and not value.fa.flow_style()


def _attach(data: CommentedMap, anchors: _Anchors, header: list[str], end: list[str]) -> None:
    """The remarks back into ruamel.yaml's comment slots, in the new order, at the new indentation."""
    if _is_block(data) and data:
        first = anchors.by_slot.get((id(data), next(iter(data))))
        if first is not None:
            first.pre = [*header, *first.pre]
            header = []
    setattr(data, Comment.attrib, Comment())
    _attach_to(data, 0, anchors)
    tail = _tidy(end, first=False)
    while tail and not tail[-1]:
        tail.pop()
    if header or tail:
        # (ruamel.yaml writes the end only after a start, even an empty one)
        data.ca.comment = [None, _tokens(_tidy(header, first=True), 0)]
        data.ca.end = _tokens(tail, 0)


def _attach_to(value: Any, column: int, anchors: _Anchors) -> None:
    if not _is_block(value):
        return
    if isinstance(value, CommentedMap):
        for i, key in enumerate(value):
            anchor = anchors.by_slot.get((id(value), key))
            child = value[key]
            pre, eol = _comments_of(anchor, child, first=i == 0)
            value.ca.items[key] = [None, _tokens(pre, column), eol, None]
            _attach_to(child, column + 2, anchors)
    else:
        for i, item in enumerate(value):
            anchor = anchors.by_slot.get((id(value), i))
            if _is_block(item) and isinstance(item, CommentedMap) and item:
                # `- name: id`: what is above the line is about the item, whichever key comes first now.
                first = anchors.by_slot.get((id(item), next(iter(item))))
                if first is not None and anchor is not None:
                    anchor.pre = [*anchor.pre, *first.pre, *first.inner]
                    first.pre, first.inner = [], []
            pre, eol = _comments_of(anchor, item, first=i == 0)
            value.ca.items[i] = [eol, _tokens(pre, column), None, None]
            _attach_to(item, column + 2, anchors)


def _comments_of(anchor: _Anchor | None, value: Any, *, first: bool) -> tuple[list[str], CommentToken | None]:
    if anchor is None:
        return [], None
    pre = [*anchor.pre, *anchor.inner]
    eol = anchor.eol
    if eol is not None and isinstance(value, LiteralScalarString | FoldedScalarString):
        # Written after a block scalar's last line it would read as more of the text: above the key instead.
        pre, eol = [*pre, eol[0]], None
    token = CommentToken(f"{eol[0]}\n", CommentMark(eol[1])) if eol is not None else None
    return _tidy(pre, first=first), token


# --- the check before anything is written -------------------------------------------------------------


def _check_unchanged(before: _Read, after: _Read, source: str) -> None:
    """The rewritten text holds the same data (key order and type spelling aside) and the same comments."""
    meaning = _Meaning()
    old, new = meaning.of(before.root, ()), meaning.of(after.root, ())
    if old != new:
        line = next(
            (k.start_mark.line + 1 for k, v in before.root.value if new.get(meaning.scalar(k)) != meaning.of(v, (k,))),
            1,
        )
        raise _problem(source, line, "fmt would change what this entry means", _BUG)
    written = Counter(r.text for r in after.remarks if r.text)
    for remark in before.remarks:
        if remark.text and written[remark.text] <= 0:
            raise _problem(source, remark.line + 1, "fmt would lose this comment", _BUG)
        written[remark.text] -= 1


class _Meaning:
    """What the loader reads from a node: scalars by their tag and value, mappings whatever their order,
    column types in their canonical spelling."""

    def __init__(self) -> None:
        self.constructor = yaml.constructor.SafeConstructor()

    def of(self, node: yaml.Node, path: tuple[Any, ...]) -> Any:
        if isinstance(node, yaml.MappingNode):
            return {self.scalar(k): self.of(v, (*path, k)) for k, v in node.value}
        if isinstance(node, yaml.SequenceNode):
            return [self.of(item, (*path, i)) for i, item in enumerate(node.value)]
        if _is_column_type(path) and node.tag == _STR:
            return _STR, _canonical_type(node.value)
        return self.scalar(node)

    def scalar(self, node: yaml.Node) -> tuple[str, str]:
        if node.tag == _STR or not isinstance(node, yaml.ScalarNode):
            return node.tag, str(node.value)
        try:
            return node.tag, repr(self.constructor.construct_object(node))
        except Exception:  # (_check_nodes let only readable values through)
            return node.tag, node.value


def _is_column_type(path: tuple[Any, ...]) -> bool:
    if len(path) != 3 or not isinstance(path[1], int):
        return False
    table_key, type_key = path[0], path[2]
    return (
        isinstance(table_key, yaml.ScalarNode)
        and isinstance(type_key, yaml.ScalarNode)
        and (table_key.tag, table_key.value, type_key.tag, type_key.value) == (_STR, "columns", _STR, "type")
    )

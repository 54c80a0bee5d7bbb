"""Reading a YAML file for its problems: each at the line of the node it is about, all collected.

A file is parsed once into a node tree (which gives the lines) and built into plain data from that
tree; only files with anchors or unusually many YAML indicators are first read as events too, to
guard against alias and nesting bombs. What the data means is the caller's business: this module
knows YAML, lines and problems, not tables or projects.
"""

from __future__ import annotations

import os
from collections.abc import Hashable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from delta_sync.model.errors import SpecProblem

MAX_FILE_BYTES = 1024 * 1024
MAX_DEPTH = 50

_Loader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
# The pure-Python composer hits the recursion limit long before libyaml's runs out of stack.
_MAX_INDICATORS = 2000 if _Loader is not yaml.SafeLoader else MAX_DEPTH
_STR_TAG = "tag:yaml.org,2002:str"
_SEQ_TAG = "tag:yaml.org,2002:seq"
_MAP_TAG = "tag:yaml.org,2002:map"
_TOO_DEEP = f"nesting is deeper than {MAX_DEPTH} levels", "a spec is never nested this deep"
# libyaml (0.2.5+, as bundled in PyYAML's wheels) stops at 1000 levels, and its scanner reads a line's
# flow openings ahead of the parser (any of them may start a key), so on `[[[[...` it refuses before
# _scan_events sees level 51: the same problem, found on the same line.
_LIBYAML_TOO_DEEP = "exceeded maximum nesting depth"


@dataclass(frozen=True, slots=True)
class Hints:
    """What to do about a file that is empty, too large, or not `key: value` lines: each kind of file
    says it in its own words."""

    empty: str
    too_large: str
    layout: str


@dataclass(frozen=True, slots=True)
class Doc:
    """One parsed file: the constructed data and the node tree it came from (for lines)."""

    file: str
    root: yaml.MappingNode
    data: dict[Any, Any]

    def line(self, *loc: Any) -> int:
        return self._find(loc)[0]

    def child_lines(self, key: str) -> dict[Any, int]:
        """Lines of the entries under the top-level `key`: list index or mapping key -> line."""
        _, node = self._find((key,))
        if isinstance(node, yaml.SequenceNode):
            return {i: _line(item.start_mark) for i, item in enumerate(node.value)}
        if isinstance(node, yaml.MappingNode) and node is not self.root:
            return {k.value: _line(k.start_mark) for k, _ in node.value}
        return {}

    def _find(self, loc: tuple[Any, ...]) -> tuple[int, yaml.Node]:
        """The node at `loc` and its line; a mapping entry gives its key's line."""
        node: yaml.Node = self.root
        line = _line(node.start_mark)
        for step in loc:
            if isinstance(node, yaml.MappingNode):
                text = step if isinstance(step, str) else str(step)
                # The last match, as YAML keeps the last of duplicate keys (reported anyway).
                pair = next((kv for kv in reversed(node.value) if kv[0].value == text), None)
                if pair is None:
                    break
                line, node = _line(pair[0].start_mark), pair[1]
            elif isinstance(node, yaml.SequenceNode) and isinstance(step, int) and step < len(node.value):
                node = node.value[step]
                line = _line(node.start_mark)
            else:
                break
        return line, node

    def problem(self, loc: tuple[Any, ...], message: str, hint: str = "") -> SpecProblem:
        return SpecProblem(self.file, self.line(*loc), message, hint)


class Unusable(Exception):
    """A problem that stops the file from being read any further: (line, message, hint)."""


def shown_path(path: Path) -> str:
    """`path` as it is shown in problems, plans and hazards: relative to the working directory,
    whichever way it was reached (`plan`, `plan specs/`, `plan /abs/specs`), absolute outside it."""
    cwd = Path.cwd()
    # Lexically first (a symlinked spec keeps its own name), then with links resolved on both sides.
    for here, there in ((cwd, Path(os.path.abspath(path))), (cwd.resolve(), path.resolve())):
        if there.is_relative_to(here):
            return str(there.relative_to(here))
    return str(path.resolve())


def read(path: Path, problems: list[SpecProblem], hints: Hints) -> Doc | None:
    """The file's document, or None with the problem that stops it from being read noted in `problems`."""
    try:
        return parse(path, problems, hints)
    except Unusable as exc:
        problems.append(SpecProblem(shown_path(path), *exc.args))
        return None


def parse(path: Path, problems: list[SpecProblem], hints: Hints) -> Doc:
    """The file's document, its lesser problems noted in `problems`; raises Unusable if it cannot be read."""
    try:
        with path.open("rb") as stream:
            raw = stream.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise Unusable(0, f"cannot read the file: {exc.strerror or exc}", "") from None
    if len(raw) > MAX_FILE_BYTES:
        raise Unusable(1, "file is larger than 1 MiB", hints.too_large)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise Unusable(line, f"file is not UTF-8 (byte {raw[exc.start]:#04x})", "save it as UTF-8") from None
    # The composer recurses once per nesting level (libyaml's crashes the interpreter past ~10^5
    # levels), and aliases can no longer be told apart once composed. Every collection has an
    # indicator of its own (`[`, `{`, `-`, `:` or `?`), so a file with few of them and no `&` is
    # safe to compose directly; the others are checked on the event stream first.
    if "&" in text or sum(map(text.count, "[{-?:")) > _MAX_INDICATORS:
        _scan_events(text)
    try:
        loader = _Loader(text)
        try:
            root, data = _compose(loader, shown_path(path), problems, hints)
        finally:
            loader.dispose()
    except yaml.YAMLError as exc:
        raise Unusable(*_yaml_error(exc, text)) from None
    return Doc(shown_path(path), root, data)


def _compose(
    loader: Any, file: str, problems: list[SpecProblem], hints: Hints
) -> tuple[yaml.MappingNode, dict[Any, Any]]:
    root = loader.get_single_node()
    if root is None:
        raise Unusable(1, "file is empty", hints.empty)
    if not isinstance(root, yaml.MappingNode):
        kind = root.tag.rsplit(":", 1)[-1].replace("seq", "list").replace("str", "string")
        raise Unusable(_line(root.start_mark), f"top level must be a mapping, got {kind}", hints.layout)
    notes: list[tuple[int, str, str]] = []
    data = _construct(root, loader, 1, notes, hints.layout)
    problems.extend(SpecProblem(file, *note) for note in notes)
    return root, data


def _scan_events(text: str) -> None:
    depth = 0
    try:
        for event in yaml.parse(text, Loader=_Loader):
            if getattr(event, "anchor", None) is not None:
                message = "YAML anchors and aliases are not supported"
                raise Unusable(_line(event.start_mark), message, "write the value out in full")
            if isinstance(event, yaml.CollectionStartEvent):
                depth += 1
                if depth > MAX_DEPTH:
                    raise Unusable(_line(event.start_mark), *_TOO_DEEP)
            elif isinstance(event, yaml.CollectionEndEvent):
                depth -= 1
    except yaml.YAMLError as exc:
        raise Unusable(*_yaml_error(exc, text)) from None


def _construct(node: yaml.Node, loader: Any, depth: int, notes: list[tuple[int, str, str]], layout: str) -> Any:
    """The value of `node`, also noting duplicate keys and keys YAML reads as non-text.

    Built here rather than by PyYAML's constructor: this pass is needed for those checks anyway,
    and nearly every node is a plain string, list or mapping that needs no help from PyYAML.
    """
    if isinstance(node, yaml.ScalarNode):
        return node.value if node.tag == _STR_TAG else _scalar(node, loader)
    line = _line(node.start_mark)
    if depth > MAX_DEPTH:
        raise Unusable(line, *_TOO_DEEP)
    if isinstance(node, yaml.SequenceNode) and node.tag == _SEQ_TAG:
        return [_construct(item, loader, depth + 1, notes, layout) for item in node.value]
    if not (isinstance(node, yaml.MappingNode) and node.tag == _MAP_TAG):
        raise Unusable(line, f"unsupported YAML tag `{node.tag}`", "remove the tag")
    result: dict[Any, Any] = {}
    first: dict[str, int] = {}
    for key, value in node.value:
        line = _line(key.start_mark)
        if not isinstance(key, yaml.ScalarNode):
            raise Unusable(line, "a key must be plain text, not a list or mapping", layout)
        if key.tag != _STR_TAG:
            name = _scalar(key, loader)
            if not isinstance(name, Hashable):  # `!!set table:`: a collection's tag on a plain key
                raise Unusable(line, f"unsupported YAML tag `{key.tag}`", "remove the tag")
            kind = key.tag.rsplit(":", 1)[-1]
            notes.append((line, f"key `{key.value}` is read as {kind}, not text", f'quote it: "{key.value}":'))
        elif key.value in first:
            message = f"key `{key.value}` appears twice (first at line {first[key.value]})"
            notes.append((line, message, "keep one; YAML would silently use the last"))
            name = key.value
        else:
            first[key.value] = line
            name = key.value
        if value.tag == _STR_TAG and isinstance(value, yaml.ScalarNode):
            result[name] = value.value
        else:
            result[name] = _construct(value, loader, depth + 1, notes, layout)
    return result


def _scalar(node: yaml.ScalarNode, loader: Any) -> Any:
    """A plain value YAML reads as a number, date or boolean; PyYAML fails on some that look like one
    (`2001-02-30`, a 5,000-digit number, `!!int abc`) with plain Python errors."""
    try:
        return loader.construct_object(node)
    except (ValueError, KeyError, AttributeError, TypeError, OverflowError) as exc:
        kind = node.tag.rsplit(":", 1)[-1]
        detail = str(exc).splitlines()[0][:120] if str(exc) else type(exc).__name__
        raise Unusable(
            _line(node.start_mark),
            f"`{node.value[:60]}` cannot be read as {kind} ({detail})",
            f'quote it: "{node.value[:60]}"',
        ) from None


def _line(mark: Any) -> int:
    return mark.line + 1 if mark is not None else 1


def _yaml_error(exc: yaml.YAMLError, text: str) -> tuple[int, str, str]:
    hint = "check the indentation and quoting around this line"
    if isinstance(exc, yaml.MarkedYAMLError) and exc.problem == _LIBYAML_TOO_DEEP:
        return _line(exc.problem_mark), *_TOO_DEEP
    if isinstance(exc, yaml.MarkedYAMLError):
        reason = "; ".join(str(part) for part in (exc.problem, exc.context) if part)
        return _line(exc.problem_mark or exc.context_mark), f"invalid YAML: {reason}", hint
    if isinstance(exc, yaml.reader.ReaderError):
        return text.count("\n", 0, exc.position) + 1, f"invalid YAML: {exc.reason}", hint
    return 1, f"invalid YAML: {exc}", hint


_KINDS = {
    type(None): "null",
    bool: "boolean",
    int: "integer",
    float: "number",
    str: "string",
    list: "list",
    dict: "mapping",
}


def kind_of(value: Any) -> str:
    return _KINDS.get(type(value), type(value).__name__)

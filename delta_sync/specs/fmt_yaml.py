"""A spec file's text as `delta-sync fmt` reads and writes it, with two YAML libraries: read as the loader
reads it (PyYAML, libyaml when there) for its node tree, lines and remarks (comments and blank lines), and
refused where the loader refuses it or a rewrite could not keep it; and read and written by ruamel.yaml's
round-trip mode, configured to write plain scalars exactly as they were written and never to wrap a line.
"""

from __future__ import annotations

import bisect
import re
import warnings
from dataclasses import dataclass
from typing import Any

import yaml
from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap
from ruamel.yaml.emitter import RoundTripEmitter
from ruamel.yaml.error import YAMLError as RuamelYAMLError
from ruamel.yaml.events import MappingEndEvent
from ruamel.yaml.nodes import ScalarNode as RuamelScalarNode
from ruamel.yaml.representer import RoundTripRepresenter

from delta_sync.model.errors import SpecError, SpecProblem
from delta_sync.specs import yamldoc

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


def _problem(source: str, line: int, message: str, hint: str = "") -> SpecError:
    return SpecError([SpecProblem(source, line, message, hint)])


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

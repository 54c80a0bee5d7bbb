"""The comments of a spec file kept with what they are about while `delta-sync fmt` moves its keys: each
remark of the file is assigned to an anchor (a key of a block mapping or an item of a block sequence, found
by walking the loader's nodes and ruamel.yaml's data side by side), and written back into ruamel.yaml's
comment slots in the new order, at the new indentation; the file's header and end stay where they are.
"""

from __future__ import annotations

import bisect
import sys
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import yaml
from ruamel.yaml.comments import Comment, CommentedMap, CommentedSeq
from ruamel.yaml.error import CommentMark
from ruamel.yaml.scalarstring import FoldedScalarString, LiteralScalarString
from ruamel.yaml.tokens import CommentToken

from delta_sync.specs.fmt_yaml import _Remark, _Verbatim


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

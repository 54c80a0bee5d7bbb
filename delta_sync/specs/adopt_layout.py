"""A spec file edited by `adopt` as text (delta_sync.specs.adopt): a file in fmt's layout is what ruamel.yaml
writes, and any other keeps its own layout, with only the lines the edit changed taken into it, indented as
the file indents them. Also the reading of a text as the spec loader reads it, which both sides compare by."""

from __future__ import annotations

import difflib
import io

import yaml
from ruamel.yaml.comments import CommentedMap

from delta_sync.model.errors import SpecError, SpecProblem
from delta_sync.specs import yamldoc
from delta_sync.specs.fmt_yaml import _round_trip_load, _yaml
from delta_sync.specs.spec_files import _HINTS


def read_doc(text: str, source: str) -> yamldoc.Doc:
    """`text` read as the loader reads a spec file; SpecError when it cannot be."""
    problems: list[SpecProblem] = []
    try:
        loader = yamldoc._Loader(text)
        try:
            root, data = yamldoc._compose(loader, source, problems, _HINTS)
        finally:
            loader.dispose()
    except yamldoc.Unusable as exc:
        raise SpecError([SpecProblem(source, *exc.args)]) from None
    except yaml.YAMLError as exc:
        raise SpecError([SpecProblem(source, *yamldoc._yaml_error(exc, text))]) from None
    if problems:
        raise SpecError(problems)
    return yamldoc.Doc(source, root, data)


def _dump(data: CommentedMap) -> str:
    stream = io.StringIO()
    _yaml().dump(data, stream)
    return stream.getvalue()


def keep_layout(text: str, data: CommentedMap, source: str) -> str:
    """The edited document as text. A file in fmt's layout is what ruamel.yaml writes; another keeps its own
    layout: the lines the edit changed (the edited document against the unedited one, both as ruamel.yaml
    writes them) are taken into the file's own lines."""
    edited = _dump(data)
    baseline = _dump(_round_trip_load(text, source))
    if baseline == text:
        return edited
    mine, theirs, base = text.splitlines(True), edited.splitlines(True), baseline.splitlines(True)
    at = _line_map(base, mine)
    out: list[str] = []
    done = 0  # lines of the file already taken
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, base, theirs, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        span = _span(at, i1, i2)
        if span is None or span[0] < done:
            return edited  # the edit falls where the two layouts differ: ruamel.yaml's text as a whole
        out.extend(mine[done : span[0]])
        # The new lines indented as the file indents the lines they replace (or the line above them).
        near = i1 if i1 < i2 else i1 - 1
        shift = _indent(mine[at[near]]) - _indent(base[near]) if near in at else 0
        out.extend(_shifted(line, shift) for line in theirs[j1:j2])
        done = span[1]
    out.extend(mine[done:])
    merged = "".join(out)
    try:
        same = read_doc(merged, source).data == read_doc(edited, source).data
    except SpecError:
        same = False
    return merged if same else edited


def _line_map(base: list[str], mine: list[str]) -> dict[int, int]:
    """Where each line of the baseline is in the file: the lines the two share, and a line between two shared
    ones where the two have as many lines between them (the same line, laid out otherwise)."""
    at: dict[int, int] = {}
    for block in difflib.SequenceMatcher(None, base, mine, autojunk=False).get_matching_blocks():
        for k in range(block.size):
            at[block.a + k] = block.b + k
    known = sorted(at)
    for lower, upper in zip([-1, *known], [*known, len(base)], strict=True):
        low, high = at.get(lower, -1), at.get(upper, len(mine))
        if upper - lower == high - low:
            for i in range(lower + 1, upper):
                at[i] = low + (i - lower)
    return at


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _shifted(line: str, shift: int) -> str:
    if shift > 0:
        return " " * shift + line
    if shift < 0 and _indent(line) >= -shift:
        return line[-shift:]
    return line


def _span(at: dict[int, int], i1: int, i2: int) -> tuple[int, int] | None:
    """The file's lines [start, end) that the baseline's lines [i1, i2) are, or None when they are not its
    lines one for one."""
    if i1 == i2:  # an insertion: after the line above it, or before the line below it
        if i1 - 1 in at:
            return at[i1 - 1] + 1, at[i1 - 1] + 1
        if i1 in at:
            return at[i1], at[i1]
        return None
    found = [at.get(i) for i in range(i1, i2)]
    if None in found or found != list(range(found[0] or 0, (found[0] or 0) + len(found))):
        return None
    return found[0] or 0, (found[-1] or 0) + 1

"""The site's reference pages, generated from the code when MkDocs builds the site, so they cannot drift:

- reference/cli.md: every command and option of the typer app (delta_sync.cli.main:app), from click's tree;
- reference/spec-files.md and reference/project-file.md: every key of a spec file and of delta-sync.yaml, from
  the pydantic models' JSON Schema (type, default, description);
- reference/hazards.md: the hazard classes (delta_sync.planning.hazards.Hazard), each with its docstring and
  what blocks it;
- reference/exit-codes.md: the exit codes, the errors that carry them and what each command's help says;
- reference/python.md: the public API (delta_sync.__all__), rendered from its docstrings by mkdocstrings.

MkDocs loads this file as a hook (mkdocs.yml, `hooks:`); tests/unit/test_docs_reference.py imports it to check
that the pages cover the code. It is not part of the delta_sync package.
"""

from __future__ import annotations

import ast
import inspect
import itertools
import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]

# --- Markdown helpers ----------------------------------------------------------------------------------------

_CODE_SPAN = re.compile(r"(`+)(.+?)\1", re.DOTALL)


def md_text(text: str) -> str:
    """Prose from the code as Markdown text: code spans kept, everything else shown as written (no emphasis,
    links or HTML made of `*`, `_`, `[`, `<`), and no `|` to split a table cell."""
    out: list[str] = []
    last = 0
    for span in _CODE_SPAN.finditer(text):
        out.append(_escape(text[last : span.start()]))
        out.append(span.group(0))
        last = span.end()
    out.append(_escape(text[last:]))
    return "".join(out)


def _escape(text: str) -> str:
    text = text.replace("\\", "\\\\").replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    for char in "*_[]|#":
        text = text.replace(char, "\\" + char)
    return text


def code(text: str) -> str:
    """`text` as a code span, whatever backticks it holds."""
    fence = "``" if "`" in text else "`"
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def cell(text: str) -> str:
    """One table cell: a single line."""
    return " ".join(text.split())


def paragraphs(text: str) -> list[str]:
    """A docstring or help text as its paragraphs, each on one line."""
    return [" ".join(block.split()) for block in re.split(r"\n\s*\n", inspect.cleandoc(text)) if block.strip()]


# --- Commands and options ------------------------------------------------------------------------------------


def _cli() -> Any:
    import typer.main  # noqa: TID251 - the docs build reads the typer app, as --help does

    from delta_sync.cli.main import app

    return typer.main.get_command(app)


def _markup_mode() -> str | None:
    from delta_sync.cli.main import app

    mode = getattr(app, "rich_markup_mode", None)
    if mode is None or type(mode).__name__ == "DefaultPlaceholder":
        import typer.core  # noqa: TID251

        mode = getattr(typer.core, "DEFAULT_MARKUP_MODE", None)
    return str(mode) if mode is not None else None


def help_text(text: str | None) -> str:
    """Help text as --help shows it: click's `\\f` cuts what follows, `\\b` marks a block kept as written, and in
    typer's rich markup mode the markup is rendered (an escaped `\\[` shows as `[`)."""
    if not text:
        return ""
    text = text.split("\f", 1)[0]
    if _markup_mode() == "rich":
        from rich.text import Text  # noqa: TID251

        text = Text.from_markup(text).plain
    return text


def _blocks(text: str | None) -> list[list[str]]:
    """Help text as --help shows it, in paragraphs of lines; a line indented under the one before (a list item
    that goes on) is joined to it."""
    found: list[list[str]] = []
    for block in re.split(r"\n\s*\n", inspect.cleandoc(help_text(text))):
        lines: list[str] = []
        for line in block.splitlines():
            if not line.strip() or line.strip() == "\b":
                continue
            if lines and line[:1].isspace() and not block.lstrip().startswith("\b"):
                lines[-1] += " " + line.strip()
            else:
                lines.append(line.strip())
        if lines:
            found.append(lines)
    return found


def help_markdown(text: str | None) -> str:
    """Help text as Markdown: its paragraphs; command lines (`$ ...`, or a click `\\b` block) as a console block;
    a paragraph whose first line ends with a colon and that keeps its lines (`Exit codes:`, one a line) as a
    list."""
    blocks: list[str] = []
    raw = re.split(r"\n\s*\n", inspect.cleandoc(help_text(text))) if text else []
    for lines, block in zip(_blocks(text), [b for b in raw if b.strip(" \n\b")], strict=False):
        if block.lstrip().startswith("\b"):
            blocks.append("```console\n" + "\n".join(lines) + "\n```")
            continue
        head, rest = (lines[0], lines[1:]) if lines[0].endswith(":") and len(lines) > 1 else ("", lines)
        commands = [line for line in rest if line.startswith("$ ")]
        if commands and len(commands) == len(rest):
            shown = "```console\n" + "\n".join(rest) + "\n```"
            blocks.append(f"{md_text(head)}\n\n{shown}" if head else shown)
        elif head:
            blocks.append(md_text(head) + "\n\n" + "\n".join(f"- {md_text(line)}" for line in rest))
        else:
            blocks.append(md_text(" ".join(" ".join(lines).split())))
    return "\n\n".join(blocks)


def _first_paragraph(text: str | None) -> str:
    found = paragraphs(help_text(text)) if text else []
    return found[0] if found else ""


def commands() -> Iterator[tuple[str, Any, Any]]:
    """Every command of the app, groups included, depth first in --help's order: (its path, the command, its
    click context)."""
    import typer._click as click  # noqa: TID251 - typer's own click

    def walk(command: Any, parent: Any, name: str) -> Iterator[tuple[str, Any, Any]]:
        ctx = click.Context(command, info_name=name, parent=parent)
        yield ctx.command_path, command, ctx
        for sub_name in getattr(command, "list_commands", lambda _ctx: [])(ctx):
            sub = command.get_command(ctx, sub_name)
            if sub is not None and not sub.hidden:
                yield from walk(sub, ctx, sub_name)

    yield from walk(_cli(), None, "delta-sync")


def params(command: Any) -> list[Any]:
    """The command's arguments and options that --help lists (not --help itself, nor hidden ones)."""
    return [p for p in command.params if not getattr(p, "hidden", False)]


def option_names(param: Any) -> str:
    """`--env, -e` for an option, `SPECS` for an argument."""
    if param.param_type_name == "argument":
        return str(param.name).upper()
    return ", ".join([*param.opts, *param.secondary_opts])


def _default(param: Any, ctx: Any) -> str:
    if getattr(param, "is_flag", False) or not getattr(param, "show_default", True):
        return ""
    default = param.default
    if default is None or default == [] or default == () or callable(default):
        return ""
    value = getattr(default, "value", default)
    return code(str(value))


def _kind(param: Any, ctx: Any) -> str:
    if getattr(param, "is_flag", False):
        return "flag"
    if param.param_type_name == "argument":
        return "argument, repeatable" if getattr(param, "nargs", 1) == -1 else "argument"
    shown = param.display_type(ctx) if hasattr(param, "display_type") else param.type.name
    shown = str(shown).strip("<>")
    if getattr(param, "multiple", False) or getattr(param, "nargs", 1) == -1:
        shown += ", repeatable"
    return code(shown)


def _anchor(path: str) -> str:
    return path.replace(" ", "-")


def cli_page() -> str:
    found = list(commands())
    lines = [
        "# Commands and options",
        "",
        "Generated from the command line itself (`delta_sync.cli.main:app`) when the site is built: every "
        "command and option, with the help `--help` prints. The [commands guide](../commands.md) says how they "
        "fit together; [exit codes](exit-codes.md) are on their own page.",
        "",
        "| command | what it does |",
        "|---|---|",
    ]
    for path, command, _ctx in found[1:]:
        lines.append(f"| [`{path}`](#{_anchor(path)}) | {cell(md_text(_first_paragraph(command.help)))} |")
    for path, command, ctx in found:
        lines += ["", f"## {path} {{#{_anchor(path)}}}", ""]
        pieces = " ".join(command.collect_usage_pieces(ctx))
        lines += ["```text", f"Usage: {path} {pieces}".rstrip(), "```", ""]
        described = help_markdown(command.help)
        if described:
            lines += [described, ""]
        if command.epilog:
            lines += [help_markdown(command.epilog), ""]
        shown = params(command)
        if shown:
            lines += ["| argument or option | type | default | description |", "|---|---|---|---|"]
            for param in shown:
                description = cell(md_text(help_text(getattr(param, "help", None) or "")))
                if getattr(param, "required", False):
                    description = "Required. " + description
                names = code(option_names(param))
                lines.append(f"| {names} | {_kind(param, ctx)} | {_default(param, ctx)} | {description} |")
            lines.append("")
        subs = list(getattr(command, "list_commands", lambda _ctx: [])(ctx))
        if subs:
            listed = ", ".join(f"[`{path} {name}`](#{_anchor(f'{path} {name}')})" for name in subs)
            lines += [f"Commands: {listed}.", ""]
    return "\n".join(lines).rstrip("\n") + "\n"


# --- Spec files and delta-sync.yaml -------------------------------------------------------------------------

# How a model is called on the page (its JSON Schema title is the class name); others keep their title.
SECTION_NAMES = {
    "TableSpec": "Table spec",
    "TombstoneSpec": "Table tombstone",
    "ViewSpec": "View spec",
    "ViewTombstoneSpec": "View tombstone",
    "ColumnSpec": "Column (`columns:`)",
    "IdentitySpec": "Identity (`identity:`)",
    "ColumnLintSpec": "A column's `lint:`",
    "PrimaryKeySpec": "Primary key (`primary_key:`)",
    "ForeignKeySpec": "Foreign key (`foreign_keys:`)",
    "LintSpec": "A spec's `lint:`",
    "ViewColumnSpec": "View column (`columns:`)",
    "_ProjectFile": "delta-sync.yaml",
    "_EnvironmentFile": "An environment (`envs: NAME:`)",
    "SparkSettings": "Spark in this process (`spark:`)",
    "SubmitSettings": "spark-submit (`submit:`)",
    "LintSettings": "Lint rules (`lint:`)",
    "NamingRule": "A naming rule (`schema-name:`, `table-name:`, `column-name:`)",
    "RequiredProperties": "Required properties (`required-properties:`)",
    "ForbiddenType": "A forbidden type (`forbidden-types:`)",
}


def section_anchor(title: str) -> str:
    return "model-" + title.strip("_").lower()


class _Schema:
    """One JSON Schema document, its objects found wherever they are (its $defs, or inline)."""

    def __init__(self, document: dict[str, Any]) -> None:
        self.defs: dict[str, Any] = document.get("$defs", {})
        self.objects: dict[str, dict[str, Any]] = {}

    def resolve(self, node: dict[str, Any]) -> dict[str, Any]:
        ref = node.get("$ref")
        if ref is None:
            return node
        return dict(self.defs[ref.rsplit("/", 1)[1]])

    def collect(self, node: Any) -> None:
        """Every object schema (with properties) under `node`, by title, in the order met."""
        if isinstance(node, dict):
            if "$ref" in node:
                target = self.resolve(node)
                if target.get("properties") and target.get("title") not in self.objects:
                    self.objects[target["title"]] = target
                    self.collect(target)
                return
            if node.get("properties") and node.get("title"):
                self.objects.setdefault(node["title"], node)
            for value in node.values():
                self.collect(value)
        elif isinstance(node, list):
            for value in node:
                self.collect(value)

    def type_of(self, node: dict[str, Any]) -> str:
        """A schema's type in words: `string`, `list of string`, `mapping of string to Column`, `one of a, b`."""
        if "$ref" in node:
            target = self.resolve(node)
            if target.get("properties"):
                title = target["title"]
                return f"[{SECTION_NAMES.get(title, title)}](#{section_anchor(title)})"
            if target.get("title") == "Hazard":
                return "[hazard class](hazards.md)"
            return self.type_of(target)
        if "const" in node:
            return code(json.dumps(node["const"]))
        if "enum" in node:
            return "one of " + ", ".join(code(str(value)) for value in node["enum"])
        for key in ("anyOf", "oneOf"):
            if key in node:
                options = [option for option in node[key] if option.get("type") != "null"]
                words = list(dict.fromkeys(self.type_of(option) for option in options))
                nullable = len(options) < len(node[key])
                text = " or ".join(words)
                return text + (" or `null`" if nullable and node.get("default", 0) is not None else "")
        if node.get("properties") and node.get("title"):
            title = node["title"]
            return f"[{SECTION_NAMES.get(title, title)}](#{section_anchor(title)})"
        kind = node.get("type")
        if isinstance(kind, list):
            return " or ".join(code(k) for k in kind)
        if kind == "array":
            return "list of " + self.type_of(node.get("items", {}))
        if kind == "object":
            keys = "string"
            if isinstance(node.get("propertyNames"), dict):
                keys = self.type_of(node["propertyNames"])
            values = node.get("additionalProperties")
            patterns = node.get("patternProperties")
            if isinstance(patterns, dict) and len(patterns) == 1:
                (pattern, values), *_ = patterns.items()
                keys = f"name matching {code(pattern)}"
            if isinstance(values, dict):
                return f"mapping of {keys} to {self.type_of(values)}"
            return "mapping"
        return code(str(kind)) if kind else "any value"


def _default_of(name: str, node: dict[str, Any], required: set[str]) -> str:
    if name in required:
        return "required"
    if "default" in node:
        return code(json.dumps(node["default"]))
    # A default_factory: pydantic leaves it out of the schema; it is the empty list or mapping.
    return {"array": "`[]`", "object": "`{}`"}.get(str(node.get("type")), "optional")


def _object_section(schema: _Schema, node: dict[str, Any]) -> list[str]:
    title = node["title"]
    lines = [f"## {SECTION_NAMES.get(title, title)} {{#{section_anchor(title)}}}", ""]
    if node.get("description"):
        lines += [md_text(" ".join(node["description"].split())), ""]
    lines += ["| key | type | default | description |", "|---|---|---|---|"]
    required = set(node.get("required", []))
    for name, field in node["properties"].items():
        description = cell(md_text(field.get("description", "")))
        lines.append(f"| `{name}` | {schema.type_of(field)} | {_default_of(name, field, required)} | {description} |")
    return [*lines, ""]


def schema_sections(document: dict[str, Any], roots: list[dict[str, Any]]) -> list[str]:
    schema = _Schema(document)
    for root in roots:
        if root.get("title"):
            schema.objects.setdefault(root["title"], root)
        schema.collect(root)
    schema.collect(document.get("$defs", {}))
    lines: list[str] = []
    for node in schema.objects.values():
        lines += _object_section(schema, node)
    return lines


def spec_files_schema() -> dict[str, Any]:
    from delta_sync.specs.spec_models import spec_json_schema

    return spec_json_schema()


def project_file_schema() -> dict[str, Any]:
    from delta_sync.specs.settings import _ProjectFile

    return _ProjectFile.model_json_schema()


def spec_files_page() -> str:
    document = spec_files_schema()
    lines = [
        "# Spec files",
        "",
        "Generated from the pydantic models of a spec file (`delta_sync/specs/spec_models.py`) when the site is "
        "built: every key, its type, its default and its description. One file declares one table, one view, or "
        "a tombstone (`drop: true`) of either. `delta-sync schema` prints the same JSON Schema, for editors; "
        "[the spec format](../spec-format.md) explains it with examples.",
        "",
    ]
    lines += schema_sections(document, document["oneOf"])
    return "\n".join(lines).rstrip("\n") + "\n"


def project_file_page() -> str:
    document = project_file_schema()
    lines = [
        "# delta-sync.yaml",
        "",
        "Generated from the pydantic models of the project file (`delta_sync/specs/settings.py`, "
        "`delta_sync/specs/lint_rules.py`) when the site is built: every key, its type, its default and its "
        "description. The file is optional; without it there is one environment, `local`, and the specs are in "
        "`specs/`. [Environments and clusters](../environments.md) explains it with examples.",
        "",
    ]
    lines += schema_sections(document, [document])
    return "\n".join(lines).rstrip("\n") + "\n"


# --- Hazard classes -----------------------------------------------------------------------------------------


def hazard_docstrings() -> dict[str, str]:
    """Each member of `Hazard` with the docstring written under it in delta_sync/planning/hazards.py."""
    from delta_sync.planning import hazards

    tree = ast.parse(inspect.getsource(hazards))
    found: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == "Hazard":
            body = node.body
            for statement, following in itertools.pairwise(body):
                if (
                    isinstance(statement, ast.Assign)
                    and isinstance(statement.targets[0], ast.Name)
                    and isinstance(following, ast.Expr)
                    and isinstance(following.value, ast.Constant)
                    and isinstance(following.value.value, str)
                ):
                    found[statement.targets[0].id] = inspect.cleandoc(following.value.value)
    return found


def hazard_blocks(hazard: Any) -> str:
    """What a class of hazard blocks and what lets it through, from the sets that decide it."""
    from delta_sync.planning.hazards import ALLOWABLE, PROBED

    if hazard in ALLOWABLE:
        return (
            f"Blocked until allowed: `--allow {hazard.value}`, the environment's `allow:`, a spec's `allow:` "
            "naming the change, or `safe_below:` for a table under that size. An environment's `deny:` refuses "
            "it whatever is allowed."
        )
    if hazard in PROBED:
        return (
            "Checked against the data before anything runs: blocked when rows break the new rule, with their "
            "count and sample rows; allowed when none do. It cannot be allowed by name."
        )
    return "Always blocked: no `--allow` lets it through; the finding says the way out."


def hazards_page() -> str:
    from delta_sync.planning.hazards import Hazard

    described = hazard_docstrings()
    lines = [
        "# Hazard classes",
        "",
        "Generated from `delta_sync.planning.hazards.Hazard` when the site is built. Every planned change carries "
        "zero or more hazards, each with its class, a one-line reason and the spec `file:line` that caused it; "
        "[safety and hazards](../safety.md) shows them in a plan.",
        "",
        "| class | what it means | what blocks it |",
        "|---|---|---|",
    ]
    for hazard in Hazard:
        meaning = cell(md_text(described.get(hazard.name, "")))
        lines.append(f"| [`{hazard.value}`](#{hazard.value}) | {meaning} | {cell(hazard_blocks(hazard))} |")
    for hazard in Hazard:
        lines += ["", f"## {hazard.value} {{#{hazard.value}}}", ""]
        lines += [md_text(p) for p in paragraphs(described.get(hazard.name, ""))]
        lines += ["", hazard_blocks(hazard)]
    return "\n".join(lines).rstrip("\n") + "\n"


# --- Exit codes ---------------------------------------------------------------------------------------------

# What each exit code means, across commands. tests/unit/test_docs_reference.py fails when the code uses a code
# that is not here.
EXIT_CODES = {
    0: "Success: done, or nothing to do (no changes, in sync, every key holds, no lint error).",
    1: "Error: a bad spec or configuration, a usage error (an unknown option, a bad value), the catalog "
    "unreachable, a statement that failed, a cancelled confirmation.",
    2: "Something to do, not an error: changes pending (`plan --detailed-exitcode` only), drift found (`drift`), "
    "spec files that would change (`adopt --check`).",
    3: "Blocked, by policy (a hazard not allowed) or by what the data says (rows break a new rule or a key); "
    "nothing of that table was applied. Also `lint`'s error rules and `check`'s broken keys.",
    4: "A saved plan refused: a table moved or was dropped since it was made, it was already applied, it was "
    "edited, its signature does not match, its specs or settings changed, or it was made for another "
    "environment.",
    130: "Interrupted (Ctrl-C, or a statement over `statement_timeout`): what ran and what did not is listed, "
    "and running the command again finishes it.",
}


def public_errors() -> dict[int, list[str]]:
    """The public exception classes (delta_sync.__all__) by the exit code the CLI gives them."""
    import delta_sync

    by_code: dict[int, list[str]] = {}
    for name in delta_sync.__all__:
        value = getattr(delta_sync, name)
        if isinstance(value, type) and issubclass(value, BaseException):
            by_code.setdefault(int(getattr(value, "exit_code", 1)), []).append(name)
    return by_code


def _exit_paragraph(text: str | None) -> str:
    """What a command's help says of its exit codes: its paragraph starting `Exit`, a list's lines joined."""
    for lines in _blocks(text):
        if lines[0].startswith("Exit"):
            if lines[0].endswith(":") and len(lines) > 1:
                return "; ".join(" ".join(line.split()) for line in lines[1:])
            return " ".join(lines)
    return ""


def exit_codes_page() -> str:
    errors = public_errors()
    lines = [
        "# Exit codes",
        "",
        "Generated when the site is built: the codes every command uses, the public exceptions that carry them "
        "(`DeltaSyncError.exit_code`, the code the command line exits with), and what each command's `--help` "
        "says. `tests/unit/test_exit_codes.py` asserts every one of them for every command. A usage error (an "
        "unknown option, a bad value) exits 1, not click's 2, which a CI gate reads as changes pending.",
        "",
        "| code | meaning | Python exceptions |",
        "|---|---|---|",
    ]
    for number, meaning in sorted(EXIT_CODES.items()):
        raised = ", ".join(f"`{name}`" for name in errors.get(number, []))
        lines.append(f"| `{number}` | {cell(md_text(meaning))} | {raised} |")
    lines += ["", "## By command", "", "| command | exit codes |", "|---|---|"]
    for path, command, _ctx in list(commands())[1:]:
        if getattr(command, "list_commands", None) is not None:
            continue
        said = _exit_paragraph(command.help)
        text = md_text(said) if said else "0 done; 1 error (its help names no other code)."
        lines.append(f"| [`{path}`](cli.md#{_anchor(path)}) | {cell(text)} |")
    return "\n".join(lines).rstrip("\n") + "\n"


# --- Python API ---------------------------------------------------------------------------------------------


def python_page() -> str:
    import delta_sync

    functions, errors, classes = [], [], []
    for name in delta_sync.__all__:
        if name.startswith("_"):
            continue
        value = getattr(delta_sync, name)
        if isinstance(value, type) and issubclass(value, BaseException):
            errors.append(name)
        elif isinstance(value, type):
            classes.append(name)
        else:
            functions.append(name)
    lines = [
        "# Python API reference",
        "",
        f"Generated from the docstrings of `delta_sync.__all__` when the site is built (delta-sync "
        f"{delta_sync.__version__}). Everything else in the package is internal. The [Python API guide]"
        "(../python-api.md) shows them at work.",
        "",
    ]
    for heading, names in (("Functions", functions), ("Results and values", classes), ("Errors", errors)):
        lines += [f"## {heading}", ""]
        for name in names:
            lines += [f"::: delta_sync.{name}", "    options:", "      heading_level: 3", ""]
    return "\n".join(lines).rstrip("\n") + "\n"


# --- lists as GitHub writes them ----------------------------------------------------------------------------

_ITEM = re.compile(r"( *)([-*+]|\d+\.) \S")
_FENCE = re.compile(r" *(```|~~~)")


def github_lists(lines: list[str]) -> list[str]:
    """Markdown lists as GitHub renders them, for Python-Markdown: a list right after a paragraph line starts a
    list (Python-Markdown wants a blank line first), and an item nested by 2 spaces is nested (it wants 4). The
    pages included from the repository (ARCHITECTURE.md, DECISIONS.md, BENCHMARKS.md) are written for GitHub."""
    out: list[str] = []
    stack: list[tuple[int, int]] = []  # the open items: (indent as written, indent as rewritten)
    fence: str | None = None
    shift = 0
    for line in lines:
        if fence is not None:
            out.append(" " * shift + line if shift > 0 and line.strip() else line)
            if line.strip().startswith(fence):
                fence = None
            continue
        indent = len(line) - len(line.lstrip(" "))
        item = _ITEM.match(line)
        if not line.strip():
            out.append(line)
            continue
        if item is None and indent == 0:
            stack = []
        if item is not None:
            while stack and stack[-1][0] >= indent:
                stack.pop()
            if not stack and out and out[-1].strip() and not _ITEM.match(out[-1]) and indent == 0:
                previous = out[-1].lstrip()
                if not previous.startswith(("#", "|", "<", ">")):
                    out.append("")
            rewritten = (stack[-1][1] + 4) if stack else 0
            stack.append((indent, rewritten))
            shift = rewritten - indent
        elif stack:
            owner = next((entry for entry in reversed(stack) if entry[0] < indent), None)
            shift = (owner[1] - owner[0]) if owner is not None else 0
        else:
            shift = 0
        fenced = _FENCE.match(line)
        if fenced is not None:
            fence = fenced.group(1)
        out.append(" " * shift + line if shift > 0 else line)
    return out


def _lists_extension() -> Any:
    from markdown import Extension  # type: ignore[import-untyped]
    from markdown.preprocessors import Preprocessor  # type: ignore[import-untyped]

    class Lists(Preprocessor):  # type: ignore[misc]
        def run(self, lines: list[str]) -> list[str]:
            return github_lists(lines)

    class GitHubLists(Extension):  # type: ignore[misc]
        def extendMarkdown(self, md: Any) -> None:
            # After pymdownx.snippets (32) has included the files, before the fences are read (superfences, 25).
            md.preprocessors.register(Lists(md), "github_lists", 31)

    return GitHubLists()


# --- the pages and MkDocs' events ---------------------------------------------------------------------------


def on_config(config: Any) -> Any:
    """Reads lists as GitHub does (github_lists)."""
    config.markdown_extensions.append(_lists_extension())
    return config


PAGES: dict[str, Callable[[], str]] = {
    "reference/cli.md": cli_page,
    "reference/spec-files.md": spec_files_page,
    "reference/project-file.md": project_file_page,
    "reference/hazards.md": hazards_page,
    "reference/exit-codes.md": exit_codes_page,
    "reference/python.md": python_page,
}


EXAMPLE_DIAGRAM = "<!-- example diagram -->"


def example_diagram() -> str | None:
    """The example project's diagram (specs/), as `delta-sync graph specs/` prints it; None when the command line
    has no `graph` command."""
    from typer.testing import CliRunner  # noqa: TID251

    from delta_sync.cli.main import app

    if "graph" not in _cli().commands:
        return None
    done = CliRunner().invoke(app, ["graph", str(REPO / "specs")], env={"COLUMNS": "1000", "NO_COLOR": "1"})
    if done.exit_code != 0:
        raise RuntimeError(f"delta-sync graph specs/ failed ({done.exit_code}): {done.output}")
    return done.stdout.strip("\n")


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """Getting started shows the example project's diagram, drawn by the command line when the site is built."""
    if EXAMPLE_DIAGRAM not in markdown:
        return markdown
    diagram = example_diagram()
    if diagram is None:
        return markdown
    shown = (
        "The example's tables, with their keys and the views that read them, as `delta-sync graph specs/` "
        "prints them: a Mermaid diagram, which GitHub also renders in Markdown (`--format dot` gives Graphviz).\n\n"
        f"```mermaid\n{diagram}\n```"
    )
    return markdown.replace(EXAMPLE_DIAGRAM, shown)


def on_files(files: Any, config: Any) -> Any:
    """Adds the generated pages to the site (MkDocs 1.6: File.generated)."""
    from mkdocs.structure.files import File

    for uri, make in PAGES.items():
        files.append(File.generated(config, uri, content=make()))
    return files

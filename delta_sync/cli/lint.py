"""`delta-sync lint`: the spec files against the team's rules (the `lint:` section of delta-sync.yaml), offline,
no Spark: each finding at `file:line` with its level and rule on stdout, a summary on stderr."""

from __future__ import annotations

import json
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer
from rich.text import Text

from delta_sync.cli import console
from delta_sync.cli.console import _fail
from delta_sync.cli.options import EnvOpt, SpecsArgs, _env
from delta_sync.model.errors import DeltaSyncError, SpecError, SpecProblem


class LintFormat(StrEnum):
    text = "text"
    json = "json"
    # GitHub workflow annotations, each finding on its spec line in the pull request.
    github = "github"


def lint(
    specs: SpecsArgs = None,
    format: Annotated[LintFormat, typer.Option("--format", "-f", help="Output format.")] = LintFormat.text,
    env: EnvOpt = None,
) -> None:
    """Check spec files against the team's rules (lint: in delta-sync.yaml), offline (no Spark).

    Each finding is printed at file:line, an error or a warning. A spec turns rules off for its table with a key of
    its own: `lint:` with `disable:` and the rules' names; a column turns the column rules off for itself the same
    way. View specs get the rules of comments and names.

    Exit codes:
    0  no findings, or warnings only
    3  an error rule failed
    1  a bad configuration, or unreadable specs

    Example:
    $ delta-sync lint specs/ --format github
    """
    from delta_sync.specs.lint import lint as run_rules
    from delta_sync.specs.spec_files import load_specs, spec_documents, spec_paths

    project, environment = _env(env)
    problems: list[SpecProblem] = []
    files: dict[Path, Path] = {}
    for path in specs or [project.specs]:
        # Checked as validate checks them: rules are only run over specs that load.
        try:
            load_specs(path, environment.vars, environment.catalog, environment.name)
            files.update((file.resolve(), file) for file in spec_paths(path))
        except SpecError as error:
            problems.extend(error.problems)
        except DeltaSyncError as error:
            _fail(error)
    if problems:
        _fail(SpecError(problems))
    docs = spec_documents(list(files.values()), environment.vars, environment.catalog, environment.name)
    try:
        report = run_rules(docs, project.lint, environment.table_defaults, project.root)
    except DeltaSyncError as error:
        _fail(error)
    if format is LintFormat.json:
        console.out.print_json(json.dumps(report.to_json()))
    elif format is LintFormat.github:
        from delta_sync.cli.options import repository_prefix
        from delta_sync.render.annotations import Annotation, lines

        found = [Annotation(f.level, f"delta-sync lint: {f.rule}", f.message, f.file, f.line) for f in report.findings]
        console.out.out(lines(found, repository_prefix()), end="", highlight=False)
    else:
        for finding in report.findings:
            line = Text(f"{finding.file}:{finding.line}: ")
            line.append(finding.level, style="ds.blocked" if finding.level == "error" else "ds.change")
            line.append(f" {finding.rule}: {finding.message}")
            console.out.print(line)
    console.err.print(Text(report.summary(), style="ds.blocked" if report.errors else "ds.ok"))
    if report.exit_code:
        raise typer.Exit(report.exit_code)

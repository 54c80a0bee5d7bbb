"""Developer sessions: `nox` runs lint, typecheck and tests.

`nox -s tests -- -m "not spark"` is the fast loop.
"""

import nox

nox.needs_version = ">=2025.10.16"
nox.options.sessions = ["lint", "typecheck", "tests"]
nox.options.default_venv_backend = "venv"
PYPROJECT = nox.project.load_toml("pyproject.toml")


@nox.session
def lint(session: nox.Session) -> None:
    session.install(*nox.project.dependency_groups(PYPROJECT, "lint"))
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")


@nox.session(python="3.11")
def typecheck(session: nox.Session) -> None:
    session.install("-e", ".", *nox.project.dependency_groups(PYPROJECT, "typecheck"))
    session.run("mypy")


@nox.session(python="3.11")
def tests(session: nox.Session) -> None:
    """Every test, the Spark tier included (the first run fetches the Delta jars through Maven)."""
    session.install("-e", ".", *nox.project.dependency_groups(PYPROJECT, "test"))
    session.run("pytest", *session.posargs)


@nox.session(python="3.11", default=False)
def bench(session: nox.Session) -> None:
    """delta-sync vs hand-written baselines (see BENCHMARKS.md): `nox -s bench -- --tables 200`."""
    session.install("-e", ".")
    session.run("python", "bench/run.py", *session.posargs)

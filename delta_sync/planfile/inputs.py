"""The project settings a saved plan was reviewed with, and how they differ from what the project says now.

The specs are not the review's only input: the environment's `vars` and `catalog` make the desired tables
from them, `defaults` and `ignore` change those tables and what counts as unmanaged, `strict` turns every
unmanaged table into a drop, `readers` / `writers` decide which protocol changes are blocked as
`compatibility`, and `column_order` whether columns are moved to the specs' order. A plan reviewed under one
set of these must not apply under another, so the plan file records each of them (`settings`), as resolved
for its environment, and `apply FILE` refuses the plan (exit 4) when one differs now, naming it.

What is not recorded, on purpose: `allow` and `deny` (apply checks the hazards against its own, as they are
then), where and how far `plan --rehearse` rehearsed (its outcome is in the file), and how Spark is reached
(`spark`, `submit`, `connect`: every table read is fingerprinted, so another catalog's tables refuse it).

A value that holds a secret (filled in from `${env:NAME}`) is recorded as a digest salted with the plan id and
the setting's name, never as the value: a plan file is a CI artifact and a pull-request comment.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from delta_sync.specs.settings import REDACTED, Environment

# The recorded settings, by their key in delta-sync.yaml, in the order a refusal names them, with the value
# each one has when the project does not set it. A key a plan does not record is taken at its default, so a
# setting delta-sync learns later binds the plans made before it only when a project sets it.
DEFAULTS: Mapping[str, Any] = {
    "vars": {},
    "catalog": None,
    "strict": False,
    "readers": [],
    "writers": [],
    "defaults": {},
    "ignore": [],
    "column_order": "spec",
    # The team's policy (recorded only when set, so plans of projects without one read as before).
    "protect": [],
    "limits": {},
    "safe_below": {},
    "rules": [],
}
# The settings whose value is a mapping: compared and named key by key (`vars: {suffix: _ci}`).
_MAPPINGS = ("vars", "defaults", "limits", "safe_below")
# How a recorded secret is told from a recorded value (which is never a mapping with this one key).
_SECRET = "secret"


def current(environment: Environment) -> dict[str, Any]:
    """The settings of `environment` that change the review, as resolved: its `defaults` and `ignore` the
    project's with its own, its `readers` and `writers` its own or the project's (secrets in clear: never
    written)."""
    policy: dict[str, Any] = {
        "protect": sorted(set(environment.protect)),
        "limits": dict(sorted(environment.limits.items())),
        "safe_below": {k.value: v for k, v in sorted(environment.safe_below.items())},
        # Their order is the order they run in, and so the order of their findings.
        "rules": list(environment.rules),
    }
    return {
        "vars": dict(sorted(environment.vars.items())),
        "catalog": environment.catalog,
        "strict": environment.strict,
        # Their order and repeats change nothing the review decides.
        "readers": sorted(set(environment.readers or ())),
        "writers": sorted(set(environment.writers or ())),
        "defaults": dict(sorted(environment.table_defaults.items())),
        "ignore": sorted(set(environment.ignore)),
        # Unset only on an Environment made in code; a loaded one has the project's when it has none.
        "column_order": environment.column_order or DEFAULTS["column_order"],
        **{key: value for key, value in policy.items() if value},
    }


def record(values: Mapping[str, Any], secrets: frozenset[str], salt: str) -> dict[str, Any]:
    """`values` (from `current`) as a plan file keeps them: each one that holds a secret as its digest."""
    recorded: dict[str, Any] = {}
    for key, value in values.items():
        if key in _MAPPINGS and isinstance(value, Mapping):
            recorded[key] = {k: _kept(f"{key}.{k}", v, secrets, salt) for k, v in value.items()}
        else:
            recorded[key] = _kept(key, value, secrets, salt)
    return recorded


@dataclass(frozen=True, slots=True)
class Difference:
    """One setting that differs: its key, and each side as a refusal shows it (secrets as ***)."""

    key: str
    was: str
    now: str
    secret: bool


def differences(
    recorded: Mapping[str, Any], values: Mapping[str, Any], secrets: frozenset[str], salt: str
) -> list[Difference]:
    """How the settings now (`values`, from `current`) differ from the `recorded` ones, in DEFAULTS' order."""
    found: list[Difference] = []
    # A key only the record has is a setting of a newer delta-sync: this one cannot tell it holds.
    for key in [*DEFAULTS, *(k for k in recorded if k not in DEFAULTS)]:
        was, now = recorded.get(key, DEFAULTS.get(key)), values.get(key, DEFAULTS.get(key))
        if key in _MAPPINGS and isinstance(was, Mapping) and isinstance(now, Mapping):
            names = [k for k in sorted({*was, *now}) if not _same(f"{key}.{k}", was.get(k), now.get(k), salt)]
            if names:
                secret = any(_hides(was.get(k)) or _holds(now.get(k), secrets) for k in names)
                shown_was = _flow({k: _shown(was[k], secrets) for k in names if k in was}, names, not was)
                shown_now = _flow({k: _shown(now[k], secrets) for k in names if k in now}, names, not now)
                found.append(Difference(key, shown_was, shown_now, secret))
        elif not _same(key, was, now, salt):
            secret = _hides(was) or _holds(now, secrets)
            found.append(Difference(key, _shown(was, secrets), _shown(now, secrets), secret))
    return found


def refusal(plan_id: str, found: list[Difference], source: str) -> str:
    """One sentence naming the first setting that differs (and the others' keys), for an exit-4 refusal.
    `source` is where the settings are now read, e.g. `delta-sync.yaml` or `delta-sync.yaml (environment ci)`."""
    first = found[0]
    if first.secret and first.was == first.now:
        said = (
            f"plan {plan_id} was reviewed with {first.key}: {first.was}; {source} now gives it another value "
            "(a secret, so neither is shown)"
        )
    else:
        said = f"plan {plan_id} was reviewed with {first.key}: {first.was}; {source} now says {first.key}: {first.now}"
    others = [d.key for d in found[1:]]
    if others:
        said += f" (and {', '.join(others)} changed too)"
    return said + ", so it was not applied; make a new plan and review it again"


def _kept(name: str, value: Any, secrets: frozenset[str], salt: str) -> Any:
    return {_SECRET: _digest(name, value, salt)} if _holds(value, secrets) else value


def _digest(name: str, value: Any, salt: str) -> str:
    # Keyed by the plan id and the setting's name: equal secrets in two settings, or in two plans, do not
    # show as equal digests, and no table of digests made beforehand applies.
    message = name.encode() + b"\0" + _canonical(value)
    return "hmac-sha256:" + hmac.new(salt.encode(), message, hashlib.sha256).hexdigest()


def _same(name: str, recorded: Any, value: Any, salt: str) -> bool:
    if _hides(recorded):
        return hmac.compare_digest(str(recorded[_SECRET]), _digest(name, value, salt))
    return _canonical(recorded) == _canonical(value)


def _hides(recorded: Any) -> bool:
    return isinstance(recorded, Mapping) and set(recorded) == {_SECRET}


def _holds(value: Any, secrets: frozenset[str]) -> bool:
    """Whether a secret is in `value`, whole or in part (`prefix_${env:TOKEN}` is a secret too)."""
    if isinstance(value, str):
        return any(secret and secret in value for secret in secrets)
    if isinstance(value, Mapping):
        return any(_holds(k, secrets) or _holds(v, secrets) for k, v in value.items())
    if isinstance(value, list | tuple):
        return any(_holds(v, secrets) for v in value)
    return False


def _canonical(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def _shown(value: Any, secrets: frozenset[str]) -> str:
    """A value as delta-sync.yaml would spell it, in YAML's flow style; a secret (recorded or now) as ***."""
    if _hides(value) or _holds(value, secrets):
        return REDACTED
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + ", ".join(_shown(v, secrets) for v in value) + "]"
    if isinstance(value, Mapping):
        return _flow({str(k): _shown(v, secrets) for k, v in value.items()}, list(value), not value)
    return str(value)


def _flow(shown: Mapping[str, str], names: list[str], empty: bool) -> str:
    """A mapping's entries among `names`, each shown; a name it lacks is said to be unset, unless the mapping
    is `empty` (then it is written so: `{}`)."""
    if empty:
        return "{}"
    return "{" + ", ".join(f"{k}: {shown[k]}" if k in shown else f"{k}: (not set)" for k in names) + "}"

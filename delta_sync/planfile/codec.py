"""Actions <-> JSON, losslessly: a saved plan carries its typed actions, and `apply FILE` rebuilds
the statements from them instead of trusting the SQL text in the file.

Decoding is strict: only the closed action union (`actions.Action`) and the model types it is made
of, no unknown or missing fields, every value of its declared type. A file edited by hand either
decodes to actions delta-sync could itself have planned, or is refused.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping
from typing import Any, Union

from delta_sync.model.errors import DeltaSyncError
from delta_sync.model.state import OMIT_EMPTY, Policy, Table
from delta_sync.planning import actions

ACTION_TYPES: dict[str, type[Any]] = {cls.__name__: cls for cls in typing.get_args(actions.Action)}


class DecodeError(DeltaSyncError):
    """A saved plan's typed actions are not what delta-sync writes."""

    exit_code = 4


def encode(value: Any) -> Any:
    """A dataclass tree as JSON values; actions carry their `kind`."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        data = {
            f.name: encode(getattr(value, f.name))
            for f in dataclasses.fields(value)
            if not (f.metadata.get(OMIT_EMPTY) and getattr(value, f.name) == f.default)
        }
        return {"kind": type(value).__name__, **data} if type(value).__name__ in ACTION_TYPES else data
    if isinstance(value, tuple | list):
        return [encode(v) for v in value]
    if value is None or isinstance(value, str | bool | int):
        return value
    raise TypeError(f"cannot encode {type(value).__name__} in a plan file")


def decode_action(data: Any, where: str = "action") -> actions.Action:
    if not isinstance(data, Mapping) or not isinstance(data.get("kind"), str):
        raise DecodeError(f"{where}: not an action (an object with a `kind`)")
    cls = ACTION_TYPES.get(data["kind"])
    if cls is None:
        raise DecodeError(f"{where}: unknown action kind `{data['kind']}`")
    fields = {k: v for k, v in data.items() if k != "kind"}
    action: actions.Action = _dataclass(cls, fields, f"{where} ({data['kind']})")
    return action


def decode_table(data: Any, where: str = "table") -> Table:
    table: Table = _decode(Table, data, where)
    return table


def decode_policy(data: Any, where: str = "policy") -> Policy:
    policy: Policy = _decode(Policy, data, where)
    return policy


_HINTS: dict[type[Any], dict[str, Any]] = {}


def _hints(cls: type[Any]) -> dict[str, Any]:
    if cls not in _HINTS:
        _HINTS[cls] = typing.get_type_hints(cls)
    return _HINTS[cls]


def _dataclass(cls: type[Any], data: Any, where: str) -> Any:
    if not isinstance(data, Mapping):
        raise DecodeError(f"{where}: expected an object")
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init}
    unknown = sorted(set(data) - set(fields))
    if unknown:
        raise DecodeError(f"{where}: unknown field `{unknown[0]}`")
    missing = [
        name
        for name, f in fields.items()
        if name not in data and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    ]
    if missing:
        raise DecodeError(f"{where}: missing field `{missing[0]}`")
    hints = _hints(cls)
    values = {name: _decode(hints[name], value, f"{where}.{name}") for name, value in data.items()}
    return cls(**values)


def _decode(hint: Any, value: Any, where: str) -> Any:
    origin = typing.get_origin(hint)
    if origin is Union or origin is types.UnionType:
        options = typing.get_args(hint)
        if value is None and type(None) in options:
            return None
        errors = []
        for option in options:
            if option is type(None):
                continue
            try:
                return _decode(option, value, where)
            except DecodeError as exc:
                errors.append(str(exc))
        raise DecodeError(errors[0] if errors else f"{where}: unexpected value")
    if origin is tuple:
        args = typing.get_args(hint)
        if not isinstance(value, list):
            raise DecodeError(f"{where}: expected a list")
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_decode(args[0], v, f"{where}[{i}]") for i, v in enumerate(value))
        if len(args) != len(value):
            raise DecodeError(f"{where}: expected {len(args)} items")
        return tuple(_decode(a, v, f"{where}[{i}]") for i, (a, v) in enumerate(zip(args, value, strict=True)))
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return _dataclass(hint, value, where)
    if hint is bool:
        if not isinstance(value, bool):
            raise DecodeError(f"{where}: expected true or false")
        return value
    if hint is int:
        if not isinstance(value, int) or isinstance(value, bool):
            raise DecodeError(f"{where}: expected an integer")
        return value
    if hint is str:
        if not isinstance(value, str):
            raise DecodeError(f"{where}: expected a string")
        return value
    raise DecodeError(f"{where}: cannot read a {hint!r}")

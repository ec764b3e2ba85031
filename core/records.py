"""One rule for every record the stages exchange: frozen dataclasses to JSON and back.

Reads and writes nothing itself. `to_json(record)` gives plain JSON data: fields in declaration
order, enums as their values, tuples as lists, dates as ISO strings, nested records as objects.
`from_json(cls, data)` reads it back by the dataclass's type hints and refuses what does not
fit, with one line that names the record and the path of the bad value (`task.json:
difficulty.level: expected int, got str`).

The rules, the same for every record:
- an unknown key is an error (a typo or a newer writer must not be dropped silently);
- a missing key takes the field's default, and is an error when the field has none;
- a field declared with `derived()` is computed by the record itself (`__post_init__`): it is
  written for readers of the JSON and ignored when read back;
- a record with a `schema_version` field refuses data of a newer schema version than its own
  default (older data is read as far as its keys allow).
"""

from __future__ import annotations

import dataclasses
import types
import typing
from datetime import date
from enum import Enum
from functools import cache
from pathlib import Path
from typing import Any, TypeVar, Union

from core.errors import RecordError

T = TypeVar("T")

SCHEMA_FIELD = "schema_version"


def derived() -> Any:
    """A field the record computes in `__post_init__`: written to JSON, never read from it."""
    return dataclasses.field(init=False, repr=False, compare=False, metadata={"derived": True})


def set_derived(record: Any, name: str, value: Any) -> None:
    """Set a derived field of a (frozen) record from its `__post_init__`."""
    object.__setattr__(record, name, value)


def to_json(obj: Any) -> Any:
    """Plain JSON data (dicts, lists, str, numbers, bools, None) for a record or any value."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: to_json(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, Enum):
        return obj.value
    if isinstance(obj, list | tuple):
        return [to_json(x) for x in obj]
    if isinstance(obj, dict):
        return {k: to_json(v) for k, v in obj.items()}
    if isinstance(obj, Path):
        return str(obj)
    if isinstance(obj, date):
        return obj.isoformat()
    return obj


def from_args(cls: type[T], args: Any) -> T:
    """A settings record from a command line's parsed arguments (attributes of the same name;
    the record's defaults for those the command line does not have)."""
    given = {
        f.name: getattr(args, f.name)
        for f in dataclasses.fields(cls)  # type: ignore[arg-type]
        if f.init and hasattr(args, f.name)
    }
    return cls(**given)


def from_json(cls: type[T], data: Any, where: str = "") -> T:
    """Read `data` as a `cls` record; `where` (a file name) prefixes any error message."""
    try:
        return typing.cast(T, _decode(cls, data, ""))
    except RecordError as exc:
        raise RecordError(f"{where}: {exc}" if where else str(exc)) from None


@cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _fail(path: str, message: str) -> RecordError:
    return RecordError(f"{path or '<record>'}: {message}")


def _describe(value: Any) -> str:
    text = repr(value)
    return f"{type(value).__name__} {text[:40]}"


def _decode_record(cls: type, data: Any, path: str) -> Any:
    if not isinstance(data, dict):
        raise _fail(path, f"expected an object ({cls.__name__}), got {_describe(data)}")
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = [k for k in data if k not in fields]
    if unknown:
        raise _fail(path, f"unknown key {unknown[0]!r} for {cls.__name__}")
    hints = _hints(cls)
    if SCHEMA_FIELD in fields and SCHEMA_FIELD in data:
        ours = fields[SCHEMA_FIELD].default
        theirs = data[SCHEMA_FIELD]
        if isinstance(theirs, int) and isinstance(ours, int) and theirs > ours:
            raise _fail(
                path, f"{cls.__name__} schema version {theirs} is newer than this reader's {ours}"
            )
    kwargs: dict[str, Any] = {}
    for name, f in fields.items():
        if not f.init:
            continue
        sub = f"{path}.{name}" if path else name
        if name in data:
            kwargs[name] = _decode(hints[name], data[name], sub)
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            raise _fail(sub, f"missing (required by {cls.__name__})")
    try:
        return cls(**kwargs)
    except (TypeError, ValueError) as exc:
        raise _fail(path, f"{cls.__name__}: {exc}") from None


def _decode(tp: Any, value: Any, path: str) -> Any:
    if tp is Any:
        return value
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return _decode_record(tp, value, path)
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin in (Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        options = [a for a in args if a is not type(None)]
        last: RecordError | None = None
        for option in options:
            try:
                return _decode(option, value, path)
            except RecordError as exc:
                last = exc
        raise last or _fail(path, f"unexpected {_describe(value)}")
    if origin is tuple:
        if not isinstance(value, list | tuple):
            raise _fail(path, f"expected a list, got {_describe(value)}")
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_decode(args[0], v, f"{path}[{i}]") for i, v in enumerate(value))
        if args and len(args) != len(value):
            raise _fail(path, f"expected {len(args)} items, got {len(value)}")
        return tuple(
            _decode(a, v, f"{path}[{i}]") for i, (a, v) in enumerate(zip(args, value, strict=True))
        )
    if origin is list:
        if not isinstance(value, list | tuple):
            raise _fail(path, f"expected a list, got {_describe(value)}")
        item = args[0] if args else Any
        return [_decode(item, v, f"{path}[{i}]") for i, v in enumerate(value)]
    if origin is dict:
        if not isinstance(value, dict):
            raise _fail(path, f"expected an object, got {_describe(value)}")
        val = args[1] if args else Any
        return {k: _decode(val, v, f"{path}.{k}") for k, v in value.items()}
    if isinstance(tp, type) and issubclass(tp, Enum):
        try:
            return tp(value)
        except ValueError:
            choices = ", ".join(str(m.value) for m in tp)
            raise _fail(path, f"{value!r} is not one of {choices}") from None
    return _primitive(tp, value, path)


def _primitive(tp: Any, value: Any, path: str) -> Any:
    if tp is bool:
        ok = isinstance(value, bool)
    elif tp is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif tp is float:
        ok = isinstance(value, int | float) and not isinstance(value, bool)
    elif tp is str:
        ok = isinstance(value, str)
    elif tp is type(None):
        ok = value is None
    elif tp is Path:
        if isinstance(value, str):
            return Path(value)
        ok = False
    elif tp is date:
        try:
            return date.fromisoformat(value)
        except (TypeError, ValueError):
            ok = False
    elif tp in (dict, list):
        ok = isinstance(value, tp)
    else:
        raise _fail(path, f"cannot read type {tp!r}")
    if not ok:
        name = getattr(tp, "__name__", str(tp))
        raise _fail(path, f"expected {name}, got {_describe(value)}")
    return value

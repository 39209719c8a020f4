"""Typed configs: a method's config dataclass built from overrides, text parsed by field type.

Every method's hyper-parameters are a ``kw_only`` dataclass whose fields carry their docstrings
(the string literal under each field, as in Tianshou's own parameter classes).
``python -m baselines.train --set KEY=VALUE`` hands the text ``VALUE`` to :func:`config_from`,
which parses it against the field's annotated type, never with ``eval``:

=========================  ==========================================================
type                        accepted text
=========================  ==========================================================
``bool``                    ``true``/``false``, ``1``/``0``, ``yes``/``no`` (any case)
``int``                     a decimal integer (``10000``, ``10_000``); not ``1e4``
``float``                   a decimal or scientific number (``3e-4``, ``0.5``, ``inf``)
``str``                     the text (one pair of matching quotes is removed)
``X | None``                ``None`` (or ``none``, ``null``), else the text as ``X``
``Literal[...]``            one of the listed values
``tuple[X, ...]``           ``64,64`` or ``(64, 64)`` or ``[64, 64]`` (``()`` is empty)
``numpy.ndarray``           like a tuple of floats
=========================  ==========================================================

Values given as Python objects (from code or a JSON checkpoint) are checked against the same
types: an int where a float is wanted becomes a float, a list becomes a tuple, and anything else
of the wrong type (``True`` for an int, ``1.5`` for an int, a string for a float) is refused
with a ``ValueError`` naming the field.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import math
import textwrap
import types
import typing
from collections.abc import Mapping
from functools import cache
from typing import Any, Literal, TypeVar, Union

import numpy as np

__all__ = ["Text", "config_from", "parse_text", "coerce", "field_docs", "describe", "as_dict",
           "kwargs_types"]

C = TypeVar("C")
_NONE_WORDS = ("none", "null")
_TRUE = ("true", "1", "yes")
_FALSE = ("false", "0", "no")


class Text(str):
    """Text typed by a user (``--set K=V``): always parsed against its field's type.

    A plain ``str`` given from code is taken as it is where the field accepts a string (a
    ``float | str`` field keeps ``"60"`` a string); a ``Text("60")`` there becomes 60.0.
    """


def _members(tp: Any) -> tuple[Any, ...]:
    """The members of a union type (``X | Y``, ``Optional[X]``), else ``(tp,)``."""
    if typing.get_origin(tp) in (Union, types.UnionType):
        return typing.get_args(tp)
    return (tp,)


def _name(tp: Any) -> str:
    if isinstance(tp, type) and typing.get_origin(tp) is None:
        return tp.__name__
    return str(tp).replace("typing.", "").replace("NoneType", "None")


def parse_text(text: str, tp: Any, name: str = "value") -> Any:
    """Parse ``text`` as a value of type ``tp`` (see the module's table).

    Raises:
        ValueError: naming ``name``, the text and the type, when no member of ``tp`` accepts it.
    """
    text = text.strip()
    members = _members(tp)
    if type(None) in members and text.lower() in _NONE_WORDS:
        return None
    errors = []
    for member in members:
        if member is type(None):
            continue
        try:
            return _parse_one(text, member)
        except (ValueError, TypeError) as err:
            errors.append(str(err))
    raise ValueError(f"{name}: cannot read {text!r} as {_name(tp)}"
                     + (f" ({'; '.join(errors)})" if errors else ""))


def _split(text: str) -> list[str]:
    inner = text.strip()
    if inner[:1] + inner[-1:] in ("()", "[]"):
        inner = inner[1:-1]
    return [part.strip() for part in inner.split(",") if part.strip()]


def _parse_one(text: str, tp: Any) -> Any:
    origin = typing.get_origin(tp)
    if tp is Any:
        return text
    if origin is Literal:
        for choice in typing.get_args(tp):
            if str(choice) == text.strip("'\""):
                return choice
        raise ValueError(f"expected one of {list(typing.get_args(tp))}")
    if tp is bool:
        low = text.lower()
        if low in _TRUE or low in _FALSE:
            return low in _TRUE
        raise ValueError("expected true or false")
    if tp is int:
        return int(text.replace("_", ""), 10)
    if tp is float:
        return float(text.replace("_", ""))
    if tp is str:
        if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
            return text[1:-1]
        return text
    if tp is np.ndarray:
        return np.array([float(p) for p in _split(text)], dtype=float)
    if origin is tuple or origin is list:
        args = typing.get_args(tp)
        parts = _split(text)
        if origin is tuple and args and args[-1] is not Ellipsis:
            if len(parts) != len(args):
                raise ValueError(f"expected {len(args)} comma-separated values")
            items = [_parse_one(p, a) for p, a in zip(parts, args, strict=True)]
        else:
            item = args[0] if args else Any
            items = [parse_text(p, item) for p in parts]
        return tuple(items) if origin is tuple else items
    raise TypeError(f"{_name(tp)} cannot be given as text")


def coerce(value: Any, tp: Any, name: str = "value") -> Any:
    """Check a Python ``value`` against type ``tp``; a string is parsed with :func:`parse_text`.

    Raises:
        ValueError: naming ``name`` when the value does not fit the type.
    """
    if isinstance(value, Text) or (
            isinstance(value, str) and not any(m is str or m is Any for m in _members(tp))):
        return parse_text(str(value), tp, name)
    if isinstance(value, np.generic):
        value = value.item()
    for member in _members(tp):
        try:
            return _coerce_one(value, member)
        except (ValueError, TypeError):
            continue
    raise ValueError(f"{name}: {value!r} is not a {_name(tp)}")


def _coerce_one(value: Any, tp: Any) -> Any:
    origin = typing.get_origin(tp)
    if tp is Any:
        return value
    if tp is type(None):
        if value is None:
            return None
        raise TypeError
    if origin is Literal:
        if value in typing.get_args(tp) and not isinstance(value, bool):
            return value
        raise ValueError
    if tp is bool:
        if isinstance(value, bool):
            return value
        raise TypeError
    if tp is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        raise TypeError
    if tp is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        raise TypeError
    if tp is str:
        if isinstance(value, str):
            return value
        raise TypeError
    if tp is np.ndarray:
        arr = np.asarray(value, dtype=float)
        if arr.ndim != 1:
            raise ValueError
        return arr
    if origin in (tuple, list) and isinstance(value, (tuple, list)):
        args = typing.get_args(tp)
        if origin is tuple and args and args[-1] is not Ellipsis:
            if len(value) != len(args):
                raise ValueError
            items = [coerce(v, a) for v, a in zip(value, args, strict=True)]
        else:
            item = args[0] if args else Any
            items = [coerce(v, item) for v in value]
        return tuple(items) if origin is tuple else items
    if isinstance(tp, type) and isinstance(value, tp):
        return value
    raise TypeError


@cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def config_from(cls: type[C], overrides: Mapping[str, Any] | None = None, *,
                defaults: Mapping[str, Any] | None = None,
                allowed: frozenset[str] | None = None, what: str | None = None) -> C:
    """Build config dataclass ``cls`` from ``defaults`` then ``overrides``, each value typed.

    Args:
        cls: A dataclass.
        overrides: Field values (text to parse, or Python values to check).
        defaults: Values that replace the class defaults first (a variant's own defaults).
        allowed: The fields ``overrides`` may set (None: every field).
        what: How errors name the method (default: the class name).

    Raises:
        ValueError: for an unknown or disallowed name, or a value that does not fit its field.
    """
    what = what or cls.__name__
    hints = _hints(cls)
    names = [f.name for f in dataclasses.fields(cls)]  # type: ignore[arg-type]
    overrides = dict(overrides or {})
    unknown = sorted(set(overrides) - set(names))
    if unknown:
        raise ValueError(f"unknown hyperparameter(s) {unknown} for {what}; known: "
                         f"{sorted(allowed if allowed is not None else names) or 'none'}")
    if allowed is not None and (refused := sorted(set(overrides) - allowed)):
        raise ValueError(f"hyperparameter(s) {refused} do not apply to {what}; it takes "
                         f"{sorted(allowed)}")
    values = {k: coerce(v, hints[k], k) for k, v in {**(defaults or {}), **overrides}.items()}
    return cls(**values)


def as_dict(config: Any) -> dict[str, Any]:
    """A config as JSON-ready values (tuples as lists, arrays as lists)."""
    def plain(v: Any) -> Any:
        if isinstance(v, (tuple, list)):
            return [plain(x) for x in v]
        if isinstance(v, np.ndarray):
            return v.tolist()
        if isinstance(v, float) and not math.isfinite(v):
            return str(v)
        return v

    return {f.name: plain(getattr(config, f.name)) for f in dataclasses.fields(config)}


@cache
def field_docs(cls: type) -> dict[str, str]:
    """Each field's docstring (the string literal under it in the class body, bases included)."""
    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        if not dataclasses.is_dataclass(klass):
            continue
        docs.update(_attributes_section(klass.__doc__ or ""))
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(klass)))
        except (OSError, TypeError, SyntaxError):  # pragma: no cover - no source
            continue
        body = tree.body[0].body  # type: ignore[attr-defined]
        for stmt, nxt in zip(body, [*body[1:], None], strict=True):
            if (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)
                    and isinstance(nxt, ast.Expr) and isinstance(nxt.value, ast.Constant)
                    and isinstance(nxt.value.value, str)):
                docs[stmt.target.id] = " ".join(inspect.cleandoc(nxt.value.value).split())
    return docs


def _attributes_section(doc: str) -> dict[str, str]:
    """A Google-style docstring's ``Attributes:`` entries (name -> text)."""
    out: dict[str, str] = {}
    lines = inspect.cleandoc(doc).splitlines()
    if "Attributes:" not in lines:
        return out
    name = None
    for line in lines[lines.index("Attributes:") + 1:]:
        if line and not line.startswith(" "):
            break
        stripped = line.strip()
        head, sep, text = stripped.partition(": ")
        if line.startswith("    ") and not line.startswith("     ") and sep and head.isidentifier():
            name = head
            out[name] = text
        elif name is not None and stripped:
            out[name] += " " + stripped
    return out


def describe(config: Any, allowed: frozenset[str] | None = None) -> str:
    """Every field of a config instance: name, type, value and docstring, one per paragraph."""
    cls = type(config)
    hints, docs = _hints(cls), field_docs(cls)
    lines = []
    for f in dataclasses.fields(config):
        if allowed is not None and f.name not in allowed:
            continue
        lines.append(f"{f.name}: {_name(hints[f.name])} = {getattr(config, f.name)!r}")
        if f.name in docs:
            lines.extend("    " + line for line in textwrap.wrap(docs[f.name], 92))
    return "\n".join(lines)


def kwargs_types(fn: Any) -> dict[str, Any]:
    """The annotated parameter types of callable ``fn`` (a class: its ``__init__``).

    A factory that only forwards ``**kwargs`` to the class it returns (a registered
    environment's entry point) gives that class's parameters.
    """
    target = fn.__init__ if isinstance(fn, type) else fn
    hints = typing.get_type_hints(target)
    params = inspect.signature(target).parameters
    named = {k: p for k, p in params.items()
             if k != "self" and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)}
    returned = hints.get("return")
    if not named and isinstance(returned, type):
        return kwargs_types(returned)
    return {k: hints.get(k, Any) for k in named}

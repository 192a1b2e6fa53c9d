"""The event model: the envelope every trace event carries, and the one registry of kinds.

Every kind is a frozen, slotted dataclass declared with ``@kind("wire.name")`` that subclasses
:class:`Event` (a point in time) or is one half of a step: :class:`StepBegin` opens a span and
names its :class:`StepEnd`. The wire name (``KIND``) is registered once; the codec, the docs and
every consumer find kinds through :data:`REGISTRY` and nowhere else.

Attributes are flat scalars (str, int, float, bool, a str-valued Enum, or None) — never object
bodies, env values or secrets: names, keys, counts and timings only. :func:`kind` rejects a
kind whose fields are not flat.

Why not plain ``@dataclass(frozen=True)``: its generated ``__init__`` stores each field through
``object.__setattr__`` (~120 ns a field here), so a traced step — two events of ~20 fields —
would cost more than the 10x margin over an OpenTelemetry span allows. :func:`kind` builds the
same frozen, slotted dataclass (type checkers see it as one, through ``dataclass_transform``)
but constructs instances with plain slot stores on a mutable layout class and then switches
them to the frozen class, which refuses every later assignment.

Envelope fields (filled in by the bus and the span context, not by the emitter):

========== ==================================================================
``v``       schema version of the wire format (:data:`SCHEMA_VERSION`)
``seq``     the bus's sequence number, strictly increasing per process
``ts``      wall-clock time of the emit, Unix nanoseconds
``instance`` the emitting manager's identity (the elector identity)
``trace_id`` 32 hex digits (W3C trace-id) of the trace the event belongs to
``span_id``  16 hex digits: the step's span (begin/end) or the point's own id
``parent_id`` 16 hex digits of the enclosing span, "" at a root
``dur_ns``   on step ends and timed points: the duration in nanoseconds
========== ==================================================================
"""

from __future__ import annotations

import dataclasses
import enum
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar

from typing_extensions import dataclass_transform

__all__ = [
    "ENVELOPE_FIELDS",
    "REGISTRY",
    "SCHEMA_VERSION",
    "Event",
    "KindInfo",
    "Outcome",
    "StepBegin",
    "StepEnd",
    "blank_class",
    "event_base",
    "kind",
]

SCHEMA_VERSION = 1

ENVELOPE_FIELDS = ("v", "seq", "ts", "instance", "trace_id", "span_id", "parent_id", "dur_ns")


class Outcome(enum.StrEnum):
    """How a step ended."""

    OK = "ok"
    ERROR = "error"
    CANCELLED = "cancelled"


_T = TypeVar("_T", bound=type)
_E = TypeVar("_E", bound="Event")


@dataclass_transform(frozen_default=True, kw_only_default=True)
def event_base(cls: _T) -> _T:
    """Declare an abstract base of event kinds (a mutable slotted dataclass at run time; the
    kinds built on it are frozen)."""
    return dataclass(slots=True, kw_only=True, unsafe_hash=True)(cls)  # type: ignore[return-value]


@event_base
class Event:
    """A point event. Subclasses add flat scalar attributes; ``KIND`` is set by :func:`kind`."""

    KIND: ClassVar[str] = ""
    # The envelope. Emitters leave these at their defaults; the bus and the span context fill
    # them (instances are completed once, on emit, before anyone else sees them).
    v: int = SCHEMA_VERSION
    seq: int = 0
    ts: int = 0
    instance: str = ""
    trace_id: str = ""
    span_id: str = ""
    parent_id: str = ""
    dur_ns: int = 0


@event_base
class StepEnd(Event):
    """The end of a step: carries the outcome and, on failure, a short error text."""

    outcome: Outcome = Outcome.OK
    error: str = ""


@event_base
class StepBegin(Event):
    """The beginning of a step. ``END`` is the kind emitted when the step ends."""

    END: ClassVar[type[StepEnd]]
    STEP: ClassVar[str] = ""


@dataclass(frozen=True, slots=True)
class KindInfo:
    """What the registry knows of one kind (used by the codec and the docs)."""

    kind: str
    cls: type[Event]
    role: str  # "point", "begin" or "end"
    step: str  # the step name for begin/end kinds, "" for points
    fields: tuple[tuple[str, str], ...]  # (name, type text) of the kind's own attributes
    enums: dict[str, type[enum.Enum]]  # attribute name -> enum class, for decoding
    doc: str


REGISTRY: dict[str, KindInfo] = {}
"""Every known kind by its wire name, filled by :func:`kind` when pycm.trace.kinds is imported."""

_SCALARS: tuple[type, ...] = (str, int, float, bool)


def _type_text(tp: Any) -> str:
    if isinstance(tp, type):
        return tp.__name__
    return str(tp).replace("typing.", "")


def _flat_type(tp: Any) -> tuple[bool, type[enum.Enum] | None]:
    """Whether ``tp`` is a flat scalar type, and the enum class it names, if any."""
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if len(args) != 1:
            return False, None
        return _flat_type(args[0])
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return True, tp
    return (isinstance(tp, type) and issubclass(tp, _SCALARS)), None


def _frozen_setattr(self: object, name: str, value: object) -> None:
    raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")


def _frozen_delattr(self: object, name: str) -> None:
    raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")


@dataclass_transform(frozen_default=True, kw_only_default=True)
def kind(name: str) -> Callable[[_T], _T]:
    """Declare and register an event kind under the wire name ``name``."""

    def declare(cls: _T) -> _T:
        if not issubclass(cls, Event):
            raise TypeError(f"{cls.__name__} is not an Event")
        if name in REGISTRY:
            raise TypeError(f"kind {name!r} is declared twice ({REGISTRY[name].cls.__name__})")
        # Only the fields and the slots from dataclass: the kind's constructor is generated
        # below, and __repr__, __eq__ and __hash__ are shared functions over the field names
        # (dataclass would compile four functions per kind: most of pycm's import time).
        layout = dataclass(slots=True, kw_only=True, init=False, repr=False, eq=False)(cls)
        names = tuple(f.name for f in dataclasses.fields(layout))
        shared = {"_FIELD_NAMES": names, "__repr__": _repr, "__eq__": _eq, "__hash__": _hash}
        for attr, value in shared.items():
            setattr(layout, attr, value)
        frozen = _frozen_class(layout, name)
        _register(frozen, name)
        return frozen  # type: ignore[return-value]

    return declare


def _values(event: Any) -> tuple[Any, ...]:
    return tuple(getattr(event, name) for name in event._FIELD_NAMES)


def _repr(self: Any) -> str:
    """As dataclass writes it: ``Name(field=value, ...)`` in field order."""
    inner = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._FIELD_NAMES)
    return f"{type(self).__qualname__}({inner})"


def _eq(self: Any, other: object) -> Any:
    """As dataclass compares: equal when of the same class and equal field by field (else
    NotImplemented, so that Python tries the other side)."""
    if other.__class__ is not self.__class__:
        return NotImplemented
    return _values(self) == _values(other)


def _hash(self: Any) -> int:
    return hash(_values(self))


_KW_ONLY: Any = object()
"""The default of a kind constructor's hidden positional parameter: no argument was given."""


def _keyword_only(cls: type, value: object) -> TypeError:
    return TypeError(f"{cls.__name__}() takes keyword arguments only, not {value!r}")


# Each kind's mutable twin (see blank_class), by the kind's frozen class.
_blanks: dict[type, type] = {}


def _frozen_class(layout: type[Event], name: str) -> type[Event]:
    """The frozen class users see: ``layout``'s slots, assignment refused, fast construction."""
    fields = dataclasses.fields(layout)
    # The mutable twin instances are built on: the layout's slots and plain stores, allocated
    # by calling it (type.__call__ with object's __new__ and __init__ parses no arguments, so
    # it is cheaper than object.__new__(layout)).
    blank = type(
        layout.__name__,
        (layout,),
        {"__slots__": (), "__module__": layout.__module__, "__init__": object.__init__},
    )
    namespace: dict[str, Any] = {
        "_blank": blank,
        "_KW_ONLY": _KW_ONLY,
        "_keyword_only": _keyword_only,
    }
    params: list[str] = []
    required: list[str] = []
    for f in fields:
        if f.default is not dataclasses.MISSING:
            namespace[f"_d_{f.name}"] = f.default
            params.append(f"{f.name}=_d_{f.name}")
        elif f.default_factory is not dataclasses.MISSING:
            raise TypeError(f"{layout.__name__}.{f.name}: event attributes take plain defaults")
        else:
            required.append(f.name)
    if required:
        params += ["*", *required]
    # The fields are positional-or-keyword parameters, not keyword-only ones: CPython fills a
    # missing positional default from a tuple but a missing keyword-only one by a dict lookup
    # each, which costs a 20-field kind more than its slot stores. The hidden positional
    # parameter catches any positional argument, so the constructor stays keyword-only.
    # The instance is built on the twin, then switched to ``cls``: the frozen class itself
    # (or a subclass, for dataclasses.replace).
    source = (
        f"def __new__(cls, _positional=_KW_ONLY, /, {', '.join(params)}):\n"
        "    if _positional is not _KW_ONLY:\n"
        "        raise _keyword_only(cls, _positional)\n"
        "    self = _blank()\n"
        + "".join(f"    self.{f.name} = {f.name}\n" for f in fields)
        + "    self.__class__ = cls\n    return self\n"
    )
    exec(source, namespace)  # generated from dataclass field names only
    new = namespace["__new__"]
    new.__qualname__ = f"{layout.__qualname__}.__new__"
    new.__code__ = new.__code__.replace(co_qualname=new.__qualname__)  # named in TypeErrors
    frozen = type(
        layout.__name__,
        (layout,),
        {
            "__slots__": (),
            "__module__": layout.__module__,
            "__qualname__": layout.__qualname__,
            "__doc__": layout.__doc__,
            "KIND": name,
            # orjson serialises a dataclass by looking for this in the type's own dict.
            "__dataclass_fields__": layout.__dataclass_fields__,
            "__new__": new,
            # object.__init__ ignores the arguments because __new__ is overridden.
            "__init__": object.__init__,
            "__setattr__": _frozen_setattr,
            "__delattr__": _frozen_delattr,
        },
    )
    _blanks[frozen] = blank
    return frozen


def blank_class(cls: type[_E]) -> type[_E]:
    """The mutable twin of the kind ``cls``: the same slots, plain attribute stores.

    For the bus's own hot paths (a step builds its end event on it): ``blank_class(cls)()`` is
    an empty instance (reading a field not stored yet raises AttributeError); store every
    field, then assign ``__class__ = cls``, which freezes it. Nobody else may see an instance
    while it is the twin.
    """
    blank: type[_E] = _blanks[cls]
    return blank


def _register(cls: type[Event], name: str) -> None:
    hints = typing.get_type_hints(cls)
    own: list[tuple[str, str]] = []
    enums: dict[str, type[enum.Enum]] = {}
    for f in dataclasses.fields(cls):
        tp = hints[f.name]
        flat, enum_cls = _flat_type(tp)
        if not flat:
            raise TypeError(f"{cls.__name__}.{f.name}: attributes must be flat scalars, not {tp}")
        if enum_cls is not None:
            enums[f.name] = enum_cls
        if f.name not in ENVELOPE_FIELDS:
            own.append((f.name, _type_text(tp)))
    if issubclass(cls, StepBegin):
        role, step = "begin", cls.STEP
        if not step or not hasattr(cls, "END"):
            raise TypeError(f"{cls.__name__} is a step begin without STEP and END")
    elif issubclass(cls, StepEnd):
        role, step = "end", name.rsplit(".", 1)[0]
    else:
        role, step = "point", ""
    doc = " ".join((cls.__doc__ or "").split())
    REGISTRY[name] = KindInfo(name, cls, role, step, tuple(own), enums, doc)

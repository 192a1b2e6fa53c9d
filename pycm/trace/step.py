"""Traced steps: :class:`Step` emits a begin event on entry and its END when the block exits,
and :func:`step_class` generates each begin kind's subclass (its ``finish`` built from END's
fields). Made by :meth:`pycm.trace.bus.Bus.step`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from types import TracebackType
from typing import Any, ClassVar

from pycm.trace.context import (
    _current,
    mark_failed,
    new_span_id,
    new_trace_id,
    span_ids,
    take_span_id,
    take_trace_id,
)
from pycm.trace.events import _KW_ONLY, ENVELOPE_FIELDS, StepBegin, StepEnd, blank_class
from pycm.trace.subscription import EventLog

__all__ = ["Step", "shared_fields", "step_class"]

_set_class: Callable[[object, type], None] = object.__dict__["__class__"].__set__
_get_current = _current.get
_set_current = _current.set
_reset_current = _current.reset

_FROM_BEGIN: Any = object()
"""The default of a finish() parameter whose attribute is copied from the begin event."""

# The ids an end event copies from its begin event (``instance`` is the bus's); the rest of the
# envelope but ``v`` is stamped when the step exits.
_IDS = ("trace_id", "span_id", "parent_id")
_STAMPED_AT_EXIT = frozenset({"seq", "ts", "dur_ns"})


def shared_fields(begin_cls: type[StepBegin]) -> tuple[str, ...]:
    """The attributes ``begin_cls`` shares with its END (copied into the end event)."""
    begin_names = {f.name for f in dataclasses.fields(begin_cls)}
    return tuple(
        f.name
        for f in dataclasses.fields(begin_cls.END)
        if f.name in begin_names and f.name not in ENVELOPE_FIELDS
    )


class Step:
    """One traced step: use as ``with bus.step(Begin(...)) as s: ...; s.finish(attr=...)``.

    Without ``finish`` the step ends with ``END`` carrying the attributes it shares with the
    begin event (outcome ok); an exception ends it with outcome error (or cancelled for
    ``CancelledError``) and the exception's text, and propagates.

    This class is on every hot path (each reconcile, each API call's parent), so each begin
    kind gets a generated subclass (:func:`step_class`) and the step works on the bus's
    internals directly: it stamps and delivers its two events as ``Bus.emit`` does, inline,
    on the events' mutable twins (plain slot stores, then one ``__class__`` switch freezes
    them), and its ``finish`` takes END's attributes as parameters (no dict, no keyword call of
    END's constructor). The end's ``ts`` is the begin's plus the duration, so
    ``end.ts - begin.ts == end.dur_ns`` exactly.
    """

    __slots__ = ("_bus", "_end", "_frozen", "_start_ns", "_token", "begin")

    # The generated subclass's kinds: the begin's mutable twin, and END.
    _BEGIN_BLANK: ClassVar[type]
    _END: ClassVar[type[StepEnd]]

    _bus: EventLog  # the bus
    _end: Any  # the end event as its mutable twin once finish() set it, else None
    _frozen: type[StepEnd]  # the class _end is frozen to at exit
    _start_ns: int
    _token: Any
    begin: StepBegin

    @property
    def trace_id(self) -> str:
        return self.begin.trace_id

    @property
    def span_id(self) -> str:
        return self.begin.span_id

    @property
    def parent_id(self) -> str:
        return self.begin.parent_id

    def __enter__(self) -> Step:
        begin: Any = self.begin
        bus = self._bus
        parent = _get_current()
        ids: Any
        if parent is None:
            # new_root_ids(), inlined: the span id is the trace id's low half.
            try:
                trace_id = take_trace_id()
            except IndexError:
                trace_id = new_trace_id()
            ids = (trace_id, trace_id[16:])
        else:
            try:
                span_id = take_span_id()
            except IndexError:
                span_id = new_span_id()
            parent_ids = span_ids(parent)  # a root reconcile's are derived (context.py)
            # A step inside a counting step (a reconcile) counts its API calls there too.
            if type(parent) is list:  # a root reconcile: the list is its counter
                ids = (parent_ids[0], span_id, parent)
            elif len(parent) == 2:
                ids = (parent_ids[0], span_id)
            else:
                ids = (parent_ids[0], span_id, parent[2])
        frozen = type(begin)
        _set_class(begin, self._BEGIN_BLANK)
        begin.trace_id = ids[0]
        begin.span_id = ids[1]
        if parent is not None:
            begin.parent_id = parent_ids[1]
        # Bus.emit, inlined: the stamps, then the delivery (EventLog).
        bus._seq = seq = bus._seq + 1
        begin.seq = seq
        begin.ts = bus._wall_ns()
        if not begin.instance:
            begin.instance = bus._instance
        _set_class(begin, frozen)
        put = bus._put
        put(begin)
        self._token = _set_current(ids)
        self._start_ns = bus._monotonic_ns()
        return self

    def finish(self, end: StepEnd | None = None, /, **attrs: Any) -> None:
        """Set how the step ends (call it inside the block): a ready end event, or ``END``
        built from ``attrs`` plus the attributes it shares with the begin event (an attribute
        END does not have is a TypeError here). A ready event is the step's until it exits:
        the step stamps its ids, duration and seq into it.

        (The generated subclasses replace this with a builder taking END's attributes as
        parameters; this is the reference it must match.)"""
        if end is not None:
            if attrs:
                raise TypeError("finish() takes an end event or keyword attributes, not both")
            self._take_ready(end)
            return
        begin = self.begin
        names = shared_fields(type(begin))
        given = {**{n: getattr(begin, n) for n in names}, **attrs}
        built = self._END(**given)  # TypeError for an unknown attribute
        self._take_ready(built)

    def _take_ready(self, end: StepEnd) -> None:
        self._frozen = type(end)
        _set_class(end, blank_class(type(end)))
        twin: Any = end
        begin = self.begin
        twin.trace_id = begin.trace_id
        twin.span_id = begin.span_id
        twin.parent_id = begin.parent_id
        if not twin.instance:
            twin.instance = self._bus._instance
        self._end = twin

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        bus = self._bus
        dur_ns = bus._monotonic_ns() - self._start_ns
        _reset_current(self._token)
        end = self._end
        if end is None:
            self.finish()
            end = self._end
        if exc is not None:
            mark_failed(end, exc)
        end.dur_ns = dur_ns
        bus._seq = seq = bus._seq + 1
        end.seq = seq
        end.ts = self.begin.ts + dur_ns
        end.__class__ = self._frozen
        put = bus._put  # (the delivery, as the begin's)
        put(end)


# The generated step classes, by begin kind.
_step_classes: dict[type, type[Step]] = {}


def step_class(begin_cls: type[StepBegin]) -> type[Step]:
    """The :class:`Step` subclass for steps that begin with ``begin_cls``: its kinds' twins as
    class constants and a generated ``finish``."""
    known = _step_classes.get(begin_cls)
    if known is not None:
        return known
    end_cls = begin_cls.END
    shared = set(shared_fields(begin_cls))
    namespace: dict[str, Any] = {
        "_END": end_cls,
        "_END_BLANK": blank_class(end_cls),
        "_FROM_BEGIN": _FROM_BEGIN,
        "_KW_ONLY": _KW_ONLY,
    }
    params: list[str] = []
    defaults: list[str] = []  # a test that every parameter is at its default
    stores: list[str] = []
    for f in dataclasses.fields(end_cls):
        name = f.name
        if name.startswith("_"):  # the generated code's own names start with one
            raise TypeError(f"{end_cls.__name__}.{name}: a step end's fields start with a letter")
        if name in _IDS:
            stores.append(f"    _e.{name} = _b.{name}")
        elif name in _STAMPED_AT_EXIT:
            continue
        elif name == "instance":
            stores.append("    _e.instance = _s._bus._instance")
        elif name in ENVELOPE_FIELDS:
            namespace[f"_d_{name}"] = f.default
            stores.append(f"    _e.{name} = _d_{name}")
        elif name in shared:
            params.append(f"{name}=_FROM_BEGIN")
            defaults.append(f"{name} is _FROM_BEGIN")
            stores.append(f"    _e.{name} = _b.{name} if {name} is _FROM_BEGIN else {name}")
        else:
            namespace[f"_d_{name}"] = f.default
            params.append(f"{name}=_d_{name}")
            defaults.append(f"{name} is _d_{name}")
            stores.append(f"    _e.{name} = {name}")
    # Positional-or-keyword parameters (their defaults are filled from a tuple; see
    # events._frozen_class) behind a hidden positional one that refuses positional attributes.
    source = (
        f"def finish(_s, _end=None, _positional=_KW_ONLY, /, {', '.join(params)}):\n"
        "    if _positional is not _KW_ONLY:\n"
        "        raise TypeError('finish() takes an end event or keyword attributes')\n"
        "    if _end is not None:\n"
        f"        if not ({' and '.join(defaults) or 'True'}):\n"
        "            raise TypeError(\n"
        "                'finish() takes an end event or keyword attributes, not both')\n"
        "        _s._take_ready(_end)\n"
        "        return\n"
        "    _b = _s.begin\n"
        "    _e = _END_BLANK()\n"
        + "\n".join(stores)
        + "\n    _s._end = _e\n    _s._frozen = _END\n"
    )
    exec(source, namespace)  # generated from dataclass field names only
    finish = namespace["finish"]
    qualname = f"{begin_cls.__name__}Step.finish"
    finish.__qualname__ = qualname
    finish.__code__ = finish.__code__.replace(co_qualname=qualname)  # named in TypeErrors
    finish.__doc__ = Step.finish.__doc__
    cls = type(
        f"{begin_cls.__name__}Step",
        (Step,),
        {
            "__slots__": (),
            "__module__": __name__,
            "__doc__": f"A :class:`Step` that begins with {begin_cls.__name__}.",
            "_BEGIN_BLANK": blank_class(begin_cls),
            "_END": end_cls,
            "finish": finish,
        },
    )
    _step_classes[begin_cls] = cls
    return cls

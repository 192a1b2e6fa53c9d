"""The informer handlers :class:`~pycm.controller.builder.ControllerBuilder` wires, one per
kind of watch: ``for_`` (:func:`primary_handlers`), ``owns`` and ``watches``
(:func:`mapped_handlers`), ``handles`` (:func:`event_handlers`); ``controls`` is KCM's owner
fan-out in :mod:`pycm.controller.owner_events`.

Handlers only compute keys and enqueue (client-go's rule: the work is the sync's), each key
with the event that caused it (:meth:`~pycm.controller.worker.Controller.trigger`, the
reconcile's span link). Tombstones (:class:`~pycm.cache.store.DeletedFinalStateUnknown`) are
unwrapped before anything sees them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, Protocol

from pycm.api.meta import key as key_of
from pycm.cache.processor import HandlerFuncs
from pycm.cache.store import DeletedFinalStateUnknown
from pycm.controller.worker import Controller

__all__ = [
    "EventKeys",
    "Forget",
    "Keyed",
    "Predicate",
    "event_handlers",
    "mapped_handlers",
    "primary_handlers",
]

Obj = dict[str, Any]


class Keyed(Protocol):
    """Anything with a queue key (a :class:`~pycm.controller.builder.Request`)."""

    @property
    def key(self) -> str: ...


Predicate = Callable[[Obj], bool]
"""Whether an object's event should enqueue anything."""
Forget = Callable[[str, Obj], None]
"""``forget(key, obj)``: an object of the primary kind is gone (deleted, or re-created)."""
EventKeys = Iterable[Keyed | str]
"""What a ``handles`` function returns: the requests (or keys) its event enqueues."""


def primary_handlers(
    controller: Controller, passes: Predicate | None, forget: Forget | None
) -> HandlerFuncs:
    """for_: an event on an object enqueues its own key; ``forget`` hears of it going."""
    enqueue = controller.enqueue
    trigger = controller.trigger

    def on_add(obj: Obj, is_in_initial_list: bool) -> None:
        if passes is None or passes(obj):
            enqueue(key_of(obj), trigger(obj, "add", None, is_in_initial_list))

    def on_delete(raw: Any) -> None:
        obj: Obj = raw.obj if isinstance(raw, DeletedFinalStateUnknown) else raw
        if passes is None or passes(obj):
            key = key_of(obj)
            if forget is not None:
                forget(key, obj)
            enqueue(key, trigger(obj, "delete"))

    def on_update(old: Obj, new: Obj) -> None:
        if passes is None or passes(new) or passes(old):
            if forget is not None and _uid(old) != _uid(new):
                on_delete(old)  # deleted and re-created between two events: forget the old
            enqueue(key_of(new), trigger(new, "update", old))

    return HandlerFuncs(on_add=on_add, on_update=on_update, on_delete=on_delete)


def _uid(obj: Mapping[str, Any]) -> Any:
    return (obj.get("metadata") or {}).get("uid")


def mapped_handlers(
    controller: Controller, keys_of: Callable[[Obj], Iterable[str]], passes: Predicate | None
) -> HandlerFuncs:
    """owns / watches: an event on an object enqueues the keys ``keys_of(obj)`` names."""

    def enqueue(obj: Obj, event: str, old: Obj | None = None, initial: bool = False) -> None:
        keys = list(keys_of(obj))
        if not keys:
            return
        trigger = controller.trigger(obj, event, old, initial)
        for key in keys:
            controller.enqueue(key, trigger)

    def on_add(obj: Obj, is_in_initial_list: bool) -> None:
        if passes is None or passes(obj):
            enqueue(obj, "add", initial=is_in_initial_list)

    def on_update(old: Obj, new: Obj) -> None:
        if passes is None or passes(new) or passes(old):
            enqueue(new, "update", old)

    def on_delete(obj: Any) -> None:
        if isinstance(obj, DeletedFinalStateUnknown):
            obj = obj.obj
        if passes is None or passes(obj):
            enqueue(obj, "delete")

    return HandlerFuncs(on_add=on_add, on_update=on_update, on_delete=on_delete)


def event_handlers(
    controller: Controller,
    add: Callable[[Obj, bool], EventKeys] | None,
    update: Callable[[Obj, Obj], EventKeys] | None,
    delete: Callable[[Obj], EventKeys] | None,
) -> HandlerFuncs:
    """handles: each function names the keys of its event; each is enqueued with the event
    as its trigger."""

    def enqueue(keys: EventKeys, obj: Obj, event: str, old: Obj | None, initial: bool) -> None:
        trigger = None
        for item in keys:
            if trigger is None:  # computed once, and only for an event that enqueues
                trigger = controller.trigger(obj, event, old, initial)
            controller.enqueue(item if isinstance(item, str) else item.key, trigger)

    def on_add(obj: Obj, is_in_initial_list: bool) -> None:
        if add is not None:
            enqueue(add(obj, is_in_initial_list), obj, "add", None, is_in_initial_list)

    def on_update(old: Obj, new: Obj) -> None:
        if update is not None:
            enqueue(update(old, new), new, "update", old, False)

    def on_delete(raw: Any) -> None:
        if delete is not None:
            obj: Obj = raw.obj if isinstance(raw, DeletedFinalStateUnknown) else raw
            enqueue(delete(obj), obj, "delete", None, False)

    return HandlerFuncs(on_add=on_add, on_update=on_update, on_delete=on_delete)

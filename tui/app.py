"""`pycm top`: the Textual app. One state (in the :class:`~tui.feed.Feed`) fed by every source;
a refresh tick (at most :data:`REFRESH_HZ` a second) drains the feed in one batch and shows the
snapshot in the active view only, so a 20k events/s stream costs a few state batches a second,
not a UI update per event.

The app is the mediator: sources push into the feed, views get ``show(snapshot)`` calls and post
messages up (a drill-in request), screens above the tabs (help, one controller's keys) are pushed
and popped here.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
from collections.abc import Sequence
from typing import ClassVar

from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.reactive import reactive
from textual.widgets import Footer, Input, Static, TabbedContent, TabPane

from pycm.trace.objref import ObjectRef
from pycm.trace.state import Snapshot
from pycm.trace.stream import SourceState, SourceStatus
from pycm.trace.why import find_object, object_of_event
from tui.actions import Action
from tui.feed import Feed, status_text
from tui.object_screen import ObjectScreen
from tui.screens import ControllerScreen, HelpScreen
from tui.sources import Playback, Source
from tui.views import (
    ControllersView,
    EventsView,
    InformersView,
    LeaderView,
    OverviewView,
    StartupView,
    View,
    key_term,
)

__all__ = ["REFRESH_HZ", "VIEWS", "TopApp", "run_top", "run_top_async"]

REFRESH_HZ = 10.0
VIEWS: tuple[tuple[str, str, type[View]], ...] = (
    ("overview", "Overview", OverviewView),
    ("leader", "Leader", LeaderView),
    ("controllers", "Controllers", ControllersView),
    ("informers", "Informers", InformersView),
    ("startup", "Start-up", StartupView),
    ("events", "Events", EventsView),
)


_STATUS_STYLE = {
    SourceState.CONNECTING: "yellow",
    SourceState.CONNECTED: "green",
    SourceState.ENDED: "green",
    SourceState.RECONNECTING: "red",
    SourceState.UNAUTHORIZED: "red",
    SourceState.FORBIDDEN: "red",
    SourceState.TLS_ERROR: "red",
    SourceState.FAILED: "red",
}


class StatusLine(Static):
    """One line: each source's connection state, the event-time clock, counters."""

    DEFAULT_CSS = """
    StatusLine { height: auto; max-height: 3; background: $boost; padding: 0 1; }
    """

    def show(self, feed: Feed, snapshot: Snapshot, paused: bool) -> None:
        text = Text()
        if paused:
            text.append(" PAUSED ", style="bold black on yellow")
            text.append(" ")
        for name, status in feed.status.items():
            style = _STATUS_STYLE[status.state]
            if status.state is SourceState.CONNECTED and status.reason.startswith("paused"):
                style = "yellow"  # a paused replay
            text.append(f"{name}: ", style="bold")
            text.append(status_text(status), style=style)
            text.append("  ")
        now = snapshot["now_ts"]
        if now:
            at = dt.datetime.fromtimestamp(now / 1e9, tz=dt.UTC).strftime("%H:%M:%S UTC")
            text.append(f"at {at}  ", style="dim")
        counters = snapshot["counters"]
        text.append(f"{counters['applied']:,} events", style="dim")
        if feed.dropped:
            text.append(f"  {feed.dropped:,} dropped by the UI", style="red")
        if counters["lost"]:
            text.append(f"  {counters['lost']:,} lost upstream", style="red")
        self.update(text)


class TopApp(App[int]):
    """``TopApp(sources)``; ``refresh_hz`` bounds view refreshes per second."""

    TITLE = "pycm top"
    CSS = """
    #filter { dock: bottom; display: none; }
    #filter.shown { display: block; }
    TabbedContent { height: 1fr; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("q", "quit", "Quit"),
        Binding("question_mark", "help", "Help"),
        Binding("slash", "filter", "Filter"),
        Binding("escape", "go_back", "Back", show=False),
        Binding("tab", "next_view(1)", "Next view", priority=True, show=False),
        Binding("shift+tab", "next_view(-1)", "Previous view", priority=True, show=False),
        Binding("p", "pause", "Pause"),
        *(
            Binding(str(n), f"view('{vid}')", title, show=False)
            for n, (vid, title, _) in enumerate(VIEWS, 1)
        ),
        Binding("space", "replay_toggle", "Play/pause", show=False),
        Binding("plus,equals_sign", "replay_speed(2.0)", "Faster", show=False),
        Binding("minus", "replay_speed(0.5)", "Slower", show=False),
        Binding("left_square_bracket", "replay_seek(-10)", "Back 10s", show=False),
        Binding("right_square_bracket", "replay_seek(10)", "Forward 10s", show=False),
    ]

    paused: reactive[bool] = reactive(False)

    def __init__(
        self,
        sources: Sequence[Source],
        *,
        refresh_hz: float = REFRESH_HZ,
        feed: Feed | None = None,
        actions: Sequence[Action] = (),
    ) -> None:
        super().__init__()
        self.actions = {a.key: a for a in actions}
        self._running_actions: set[str] = set()
        self.sources = list(sources)
        self.feed = feed or Feed()
        self.refresh_hz = refresh_hz
        self.snapshot: Snapshot = self.feed.state.snapshot()
        self.frames = 0  # refreshes that showed a new snapshot
        self._generation = self.feed.generation

    # --- composition and lifecycle ------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield StatusLine(id="status")
        with TabbedContent(id="tabs", initial="overview"):
            for vid, title, cls in VIEWS:
                with TabPane(title, id=vid):
                    yield cls(id=f"{vid}-view")
        yield Input(placeholder="filter (esc clears)", id="filter", disabled=True)
        yield Footer()

    def on_mount(self) -> None:
        for source in self.sources:
            self.run_worker(
                self._run_source(source),
                name=f"source {source.name}",
                group="sources",
                exit_on_error=False,
            )
        self.set_interval(1.0 / self.refresh_hz, self.flush, name="refresh")
        for key, extra in self.actions.items():
            self.bind(key, f"host_action({key!r})", description=extra.description)
        self.flush(force=True)

    def action_host_action(self, key: str) -> None:
        """Run a host-provided action (see :mod:`tui.actions`), once at a time per key."""
        extra = self.actions.get(key)
        if extra is None or key in self._running_actions:
            return
        self._running_actions.add(key)
        self.run_worker(self._run_host_action(extra), name=f"action {key}", exit_on_error=False)

    async def _run_host_action(self, extra: Action) -> None:
        try:
            message = await extra.run()
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self.notify(f"{extra.description}: {type(exc).__name__}: {exc}", severity="error")
        else:
            self.notify(message or extra.description)
        finally:
            self._running_actions.discard(extra.key)

    async def _run_source(self, source: Source) -> None:
        try:
            await source.run(self.feed)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self.feed.set_status(
                source.name,
                SourceStatus(SourceState.FAILED, f"failed: {type(exc).__name__}: {exc}"),
            )

    # --- the refresh tick ---------------------------------------------------------------------

    def flush(self, force: bool = False) -> None:
        """Apply what the sources pushed and, unless paused, show it in the active view."""
        if not self.is_running:
            # Quitting: the screens' widgets are removed before the app's timers stop, so a
            # refresh tick can land in between, with nothing left to show it in.
            return
        applied = self.feed.drain()
        changed = self.feed.take_dirty() or applied > 0
        if self.feed.generation != self._generation:
            self._generation = self.feed.generation
            changed = True
        if self.paused and not force:
            return
        if not (changed or force):
            return
        self.snapshot = snapshot = self.feed.state.snapshot()
        self.frames += 1
        self.query_one(StatusLine).show(self.feed, snapshot, self.paused)
        view = self.active_view
        if view is not None:
            view.show(snapshot, self.feed)
        if isinstance(self.screen, ControllerScreen):
            self.screen.show(snapshot)
        elif isinstance(self.screen, ObjectScreen):
            self.screen.show(self.feed.state)

    @property
    def active_view(self) -> View | None:
        active = self.query_one(TabbedContent).active
        for vid, _, cls in VIEWS:
            if vid == active:
                return self.query_one(f"#{vid}-view", cls)
        return None

    def view(self, vid: str) -> View:
        for v, _, cls in VIEWS:
            if v == vid:
                return self.query_one(f"#{vid}-view", cls)
        raise KeyError(vid)

    # --- messages up ---------------------------------------------------------------------------

    def on_tabbed_content_tab_activated(self, event: TabbedContent.TabActivated) -> None:
        view = self.active_view
        if view is not None:
            filt = self.query_one("#filter", Input)
            if filt.value != view.filter_text:
                filt.value = view.filter_text
            view.focus_content()
        self.flush(force=True)

    def on_controllers_view_drill_requested(self, event: ControllersView.DrillRequested) -> None:
        screen = ControllerScreen(event.instance, event.controller)
        self.push_screen(screen)
        self.call_after_refresh(screen.show, self.snapshot)

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id == "filter":
            view = self.active_view
            if view is not None:
                view.set_filter(event.value)
                view.show(self.snapshot, self.feed)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id == "filter":
            view = self.active_view
            key = key_term(event.value)
            if view is not None and key and not view.filters_keys:
                # This view has no keys to filter: `/key:ns/name` asks for the object instead
                # (and is not left behind as a filter that hides every row).
                self.action_go_back()
                self.open_key(key)
                return
            if view is not None:
                view.focus_content()
            if not event.value:
                self._hide_filter()

    def on_events_view_object_requested(self, event: EventsView.ObjectRequested) -> None:
        ref = object_of_event(self.feed.state, event.event)
        if ref is not None:
            self.open_object(ref)

    def on_controller_screen_key_requested(self, event: ControllerScreen.KeyRequested) -> None:
        self.open_key(event.key)

    def open_key(self, key: str) -> None:
        """Open the object of ``key`` (``ns/name`` or ``resource/ns/name``), or say there is
        none."""
        ref = find_object(self.feed.state, key)
        if ref is None:
            self.notify(f"no history of {key} yet", severity="warning")
        else:
            self.open_object(ref)

    def open_object(self, ref: ObjectRef) -> None:
        """Push the Object screen of ``ref`` (its history and chain of causes)."""
        screen = ObjectScreen(ref)
        self.push_screen(screen)
        self.call_after_refresh(screen.show, self.feed.state)

    def on_events_view_copied(self, event: EventsView.Copied) -> None:
        self.notify(f"copied trace id {event.text}")

    # --- actions --------------------------------------------------------------------------------

    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())

    def action_filter(self) -> None:
        if len(self.screen_stack) > 1:
            return  # the filter belongs to the views: it would open, unseen, behind this screen
        filt = self.query_one("#filter", Input)
        filt.disabled = False
        filt.add_class("shown")
        filt.focus()

    def action_go_back(self) -> None:
        filt = self.query_one("#filter", Input)
        if len(self.screen_stack) > 1:
            self.pop_screen()
        elif filt.has_class("shown") or filt.value:
            filt.value = ""
            self._hide_filter()
            view = self.active_view
            if view is not None:
                view.set_filter("")
                view.focus_content()
            self.flush(force=True)

    def _hide_filter(self) -> None:
        filt = self.query_one("#filter", Input)
        filt.remove_class("shown")
        filt.disabled = True

    def action_next_view(self, step: int) -> None:
        if len(self.screen_stack) > 1:
            return
        tabs = self.query_one(TabbedContent)
        ids = [vid for vid, _, _ in VIEWS]
        tabs.active = ids[(ids.index(tabs.active) + step) % len(ids)]

    def action_view(self, vid: str) -> None:
        if len(self.screen_stack) == 1:
            self.query_one(TabbedContent).active = vid

    def action_pause(self) -> None:
        self.paused = not self.paused

    def watch_paused(self, paused: bool) -> None:
        lines = self.query(StatusLine)
        if not lines:
            return  # not composed yet
        lines.first().show(self.feed, self.snapshot, paused)
        if not paused:
            self.flush(force=True)

    def _playbacks(self) -> list[Playback]:
        return [s for s in self.sources if isinstance(s, Playback)]

    def action_replay_toggle(self) -> None:
        for source in self._playbacks():
            source.toggle_play()

    def action_replay_speed(self, factor: float) -> None:
        for source in self._playbacks():
            source.change_speed(factor)

    def action_replay_seek(self, seconds: float) -> None:
        for source in self._playbacks():
            source.seek(seconds)
        self.flush(force=True)


def run_top(sources: Sequence[Source]) -> int:
    """Run `pycm top` on ``sources`` in this terminal until the user quits (blocking: it runs
    its own event loop)."""
    app = TopApp(sources)
    app.run()
    return app.return_code or 0


async def run_top_async(
    sources: Sequence[Source],
    *,
    stop: asyncio.Event | None = None,
    headless: bool = False,
    actions: Sequence[Action] = (),
) -> int:
    """:func:`run_top` inside a running event loop (`pycm demo`): returns when the user quits
    or, if given, once ``stop`` is set. ``actions`` add keys (the demo's chaos controls)."""
    app = TopApp(sources, actions=actions)

    async def exit_on_stop(event: asyncio.Event) -> None:
        await event.wait()
        app.exit(0)

    watcher = (
        asyncio.create_task(exit_on_stop(stop), name="pycm top stop") if stop is not None else None
    )
    try:
        await app.run_async(headless=headless)
    finally:
        if watcher is not None:
            watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watcher
    return app.return_code or 0

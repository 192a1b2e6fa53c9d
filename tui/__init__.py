"""`pycm top`: the Textual terminal UI over pycm's trace events.

For callers (``pycm demo``), import the submodules, not this package (it stays import-free so
``pycm --help`` never loads Textual)::

    from tui.app import run_top, run_top_async       # run_top blocks until the user quits
    from tui.sources import BusSource, SseSource, ReplaySource

    run_top([SseSource("https://127.0.0.1:10257", token=admin_token, verify=False), ...])
    run_top([BusSource(bus)])                         # a Bus in this process
    await run_top_async(sources, stop=stop_event)     # inside a running loop

Modules: :mod:`tui.sources` (the sources: the stream client, replay, a bus, a list — from
:mod:`pycm.trace`, with :mod:`pycm.trace.credentials` for token, CA and kubeconfig),
:mod:`tui.feed` (the bounded buffer and the one state), :mod:`tui.app` (``TopApp``),
:mod:`tui.views` (one per tab), :mod:`tui.screens` (help, controller keys), :mod:`tui.keys_table`
(the controller keys' table, a cursor on keys), :mod:`tui.object_screen` (an object's why),
:mod:`tui.command` (the ``top`` subcommand).
"""

"""``pycm demo``: the emulator, three ``pycm run`` replicas and a workload on one machine.

- :mod:`~pycm.demo.command` — the subcommand (``--duration``, ``--no-tui``) and exit statuses.
- :mod:`~pycm.demo.processes` — child processes: start in their own session, stop with
  SIGTERM then SIGKILL after a bound; free local ports.
- :mod:`~pycm.demo.stream` — one replica's ``/debug/pycm/events`` SSE stream, read over HTTPS
  (its own generated certificate trusted), reconnecting; events formatted one line each.
- :mod:`~pycm.demo.orchestrator` — the composition: temp dir → emulator → replicas → streams →
  workload, until Ctrl-C or ``--duration``; then the verdict.

Only :mod:`pycm.cli` imports this package (it sits above :mod:`pycm.app` and imports
``pycm.app``/``kube``/``trace``/``util`` only; the manager itself runs as child processes).
"""

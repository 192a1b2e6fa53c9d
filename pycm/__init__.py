"""pycm: a Python controller manager built the way kube-controller-manager is built."""

import sys

__version__ = "0.1.0"

# httpx's package imports its command-line client (httpx._main) whenever rich and click are
# installed, which they are (textual needs rich): ~0.3 s of every pycm process's start-up, a
# fifth of ``pycm run``'s, for a CLI pycm never runs. httpx guards that import with
# ``except ImportError``, and a ``None`` in sys.modules makes an import raise it: so the CLI
# module is never loaded in a process that imports pycm before httpx (``httpx.main`` there
# says its dependencies are missing; nothing in pycm calls it).
if "httpx" not in sys.modules:
    sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]

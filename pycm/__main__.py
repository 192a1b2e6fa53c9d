"""``python -m pycm`` is the ``pycm`` command."""

from pycm.cli import entry

raise SystemExit(entry())

"""``python -m pycm`` is the ``pycm`` command."""

from pycm.cli import main

raise SystemExit(main())

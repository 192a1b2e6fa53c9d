"""The manager's start-up failure and its exit statuses.

At the bottom of the composition root's modules (serving, election, StartControllers raise
it; the manager turns it into one log line and the exit status), so none of them imports
another to fail.
"""

from __future__ import annotations

__all__ = ["EXIT_FAILED", "EXIT_OK", "EXIT_USAGE", "ManagerError"]

# Reason the manager gave up, kept for the exit status and the ManagerStopped event.
EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


class ManagerError(Exception):
    """A start-up failure with a message fit for the user (no traceback); ``exit_code`` 2 when
    the user's configuration is at fault (a kubeconfig found bad only at start-up, such as one
    named by KUBECONFIG), as for a bad flag."""

    def __init__(self, message: str, *, exit_code: int = EXIT_FAILED) -> None:
        super().__init__(message)
        self.exit_code = exit_code

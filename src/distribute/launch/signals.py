"""Catching the launcher's own termination signals so they can be forwarded to the tasks.

Every task runs in its own process group, so a Ctrl-C in a terminal (SIGINT to the foreground
group) or a SIGTERM from a scheduler reaches the launcher only. While a launch runs, the
launcher records SIGINT, SIGTERM and SIGHUP instead of dying, forwards them to every task's
group and stops the tasks. Handlers can only be installed from the main thread; elsewhere
nothing is caught (the caller's thread must then stop the launch some other way).
"""

from __future__ import annotations

import signal
import threading
from types import FrameType, TracebackType
from typing import Any, Dict, List, Optional, Type

__all__ = ["FORWARDED_SIGNALS", "SignalCatcher", "redeliver"]

FORWARDED_SIGNALS = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP")
                          if hasattr(signal, name))


class SignalCatcher:
    """A context manager that records :data:`FORWARDED_SIGNALS` while it is active.

    Args:
        enabled: False to catch nothing (the default handlers stay in place).
    """

    def __init__(self, enabled: bool = True) -> None:
        self._enabled = enabled and threading.current_thread() is threading.main_thread()
        self._received: List[int] = []
        self._previous: Dict[int, Any] = {}

    def __enter__(self) -> "SignalCatcher":
        if self._enabled:
            for signum in FORWARDED_SIGNALS:
                self._previous[signum] = signal.signal(signum, self._record)
        return self

    def __exit__(self, exc_type: Optional[Type[BaseException]],
                 exc: Optional[BaseException], tb: Optional[TracebackType]) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)
        self._previous.clear()

    def _record(self, signum: int, frame: Optional[FrameType]) -> None:
        self._received.append(signum)

    def take(self) -> List[int]:
        """The signals received since the last call, oldest first (also after the block)."""
        taken: List[int] = []
        while self._received:  # pop one by one: a handler may append meanwhile
            taken.append(self._received.pop(0))
        return taken


def redeliver(signum: int) -> None:
    """Raises ``signum`` again in this process, now that its usual handler is back.

    The default action follows (SIGTERM ends the process, SIGINT raises KeyboardInterrupt),
    or the handler the program had installed runs.
    """
    signal.raise_signal(signum)

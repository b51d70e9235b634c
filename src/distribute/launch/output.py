"""Output of the tasks: split into lines, kept per task, prefixed with the task's name.

Each task's stdout and stderr arrive as chunks of bytes. They are cut into lines (a line
longer than :data:`MAX_LINE_BYTES` is cut there too), decoded as UTF-8 (bad bytes become
U+FFFD), stored unprefixed per task, and stored prefixed (``[worker:1] ...``) in arrival
order for the whole cluster. A *sink* may also receive each prefixed line as it arrives.
The launcher's own notes join the cluster's lines as ``[launch] ...`` (on ``stderr``).
"""

from __future__ import annotations

from typing import Callable, Dict, List, Optional

__all__ = ["MAX_LINE_BYTES", "OutputCollector", "Sink", "prefix"]

MAX_LINE_BYTES = 1 << 20

Sink = Callable[[str, str], None]
"""Receives ``(stream, prefixed_line)``; ``stream`` is ``'stdout'`` or ``'stderr'``."""


def prefix(task: str, line: str) -> str:
    """``'[worker:1] line'``: how a task's line appears in the launcher's output.

    Example:
        >>> prefix("worker:1", "step 3\\n")
        '[worker:1] step 3\\n'
    """
    return f"[{task}] {line}"


class _LineBuffer:
    """Accumulates bytes and hands out complete lines."""

    def __init__(self) -> None:
        self._pending = bytearray()

    def feed(self, data: bytes) -> List[bytes]:
        self._pending += data
        lines: List[bytes] = []
        while True:
            end = self._pending.find(b"\n")
            if end < 0 and len(self._pending) >= MAX_LINE_BYTES:
                end = MAX_LINE_BYTES - 1
            elif end < 0:
                return lines
            lines.append(bytes(self._pending[: end + 1]))
            del self._pending[: end + 1]

    def flush(self) -> Optional[bytes]:
        """The unfinished last line, if any (the stream ended without a newline)."""
        if not self._pending:
            return None
        rest, self._pending = bytes(self._pending), bytearray()
        return rest


class OutputCollector:
    """Collects the lines of every task's stdout and stderr.

    Args:
        tasks: the task names, e.g. ``['worker:0', 'worker:1']``.
        sink: called with each prefixed line as it arrives (for live echo), or None.
        keep: False to pass lines to ``sink`` only, keeping nothing in memory.
    """

    def __init__(self, tasks: List[str], sink: Optional[Sink] = None, keep: bool = True) -> None:
        self._sink = sink
        self._keep = keep
        self._buffers = {(task, stream): _LineBuffer()
                         for task in tasks for stream in ("stdout", "stderr")}
        self._per_task: Dict[str, List[str]] = {task: [] for task in tasks}
        self._all: List[str] = []

    def feed(self, task: str, stream: str, data: bytes) -> None:
        """Adds a chunk read from ``task``'s ``stream``."""
        for raw in self._buffers[(task, stream)].feed(data):
            self._add(task, stream, raw.decode("utf-8", errors="replace"))

    def close(self, task: str, stream: str) -> None:
        """Marks the end of ``task``'s ``stream``; a last line without newline is kept."""
        rest = self._buffers[(task, stream)].flush()
        if rest is not None:
            self._add(task, stream, rest.decode("utf-8", errors="replace"))

    def _add(self, task: str, stream: str, line: str) -> None:
        shown = prefix(task, line if line.endswith("\n") else line + "\n")
        if self._keep:
            self._per_task[task].append(line)
            self._all.append(shown)
        if self._sink is not None:
            self._sink(stream, shown)

    def note(self, text: str) -> None:
        """Adds a line of the launcher's own, ``[launch] text``, to the output (``stderr``)."""
        shown = prefix("launch", text + "\n")
        if self._keep:
            self._all.append(shown)
        if self._sink is not None:
            self._sink("stderr", shown)

    def task_output(self, task: str) -> str:
        """Everything ``task`` wrote (stdout and stderr, line by line), unprefixed."""
        return "".join(self._per_task[task])

    def output(self) -> str:
        """Every prefixed line of every task (and every note), in the order they arrived."""
        return "".join(self._all)

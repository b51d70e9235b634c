"""Link.wait: slices, a work that completes as a slice expires, failures (with stand-in works).

An expired slice is never a failure before the limit (issue 15: a slow peer is not a dead one).
"""

from __future__ import annotations

import time
from typing import Any, List, Optional

import pytest

from distribute.collectives.link import Connection, Link


class Work:
    """A stand-in for a torch Work: raises the given errors from wait(), then returns."""

    def __init__(self, errors: List[str], completed_after: int) -> None:
        self.errors = list(errors)
        self.waits = 0
        self.completed_after = completed_after

    def wait(self, timeout: Any = None) -> bool:
        self.waits += 1
        if self.errors:
            raise RuntimeError(self.errors.pop(0))
        return True

    def is_completed(self) -> bool:
        return self.waits >= self.completed_after


class Failed(Exception):
    pass


def link(peer: Optional[BaseException] = None) -> Link:
    return Link(Connection(), lambda error, timed_out, limit: Failed(error), lambda: peer)


def test_a_work_that_completes_as_its_slice_expires_is_waited_for_again() -> None:
    work = Work(["Operation timed out!"], completed_after=1)  # done right after the slice expired
    link().wait(work, 5.0)
    assert work.waits == 2


def test_slices_go_on_until_the_work_is_done() -> None:
    work = Work(["Operation timed out!"] * 3, completed_after=4)
    link().wait(work, 5.0)
    assert work.waits == 4


def test_an_expired_slice_is_never_a_failure_before_the_limit() -> None:
    work = Work(["Operation timed out!"] * 5, completed_after=1)  # completed, yet its slices keep expiring
    link().wait(work, 5.0)
    assert work.waits == 6


def test_a_work_whose_slices_expire_past_the_limit_fails_as_timed_out() -> None:
    failures: List[Any] = []
    never = Work(["Operation timed out!"] * 10_000, completed_after=10_000)
    never.wait = lambda timeout=None: (time.sleep(0.01), Work.wait(never))[1]  # type: ignore[method-assign]
    waiting = Link(Connection(), lambda error, timed_out, limit: failures.append(timed_out) or Failed(error),
                   lambda: None)
    with pytest.raises(Failed, match="Operation timed out"):
        waiting.wait(never, 0.1)
    assert failures == [True]


def test_another_error_and_a_peer_failure_raise() -> None:
    with pytest.raises(Failed, match="Connection closed by peer"):
        link().wait(Work(["Connection closed by peer"], completed_after=1), 5.0)
    with pytest.raises(ValueError, match="peer failed"):
        link(ValueError("peer failed")).wait(Work(["Operation timed out!"], completed_after=9), 5.0)

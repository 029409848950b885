"""tests/polling.py: the waiting and retrying every server-driving test and bench script shares."""
from __future__ import annotations

import pytest

from tests.polling import retry, wait_for


def flaky(failures: int, error: Exception, value: object = "ok"):
    calls = []

    def fn():
        calls.append(1)
        if len(calls) <= failures:
            raise error
        return value
    return fn, calls


def test_retry_returns_once_the_call_succeeds():
    fn, calls = flaky(2, ConnectionError("starting"))
    assert retry(fn, attempts=5, every=0) == "ok" and len(calls) == 3


def test_retry_gives_up_with_the_last_error():
    fn, calls = flaky(9, ConnectionError("down"))
    with pytest.raises(ConnectionError, match="down"):
        retry(fn, attempts=3, every=0)
    assert len(calls) == 3


def test_retry_does_not_retry_what_is_not_transient():
    fn, calls = flaky(1, ValueError("bad request"))
    with pytest.raises(ValueError):
        retry(fn, attempts=5, every=0, transient=lambda e: isinstance(e, ConnectionError))
    assert len(calls) == 1


def test_wait_for_polls_through_errors_and_falsy_values():
    answers = iter([ConnectionError("restarting"), [], ["pod"]])

    def fn():
        a = next(answers)
        if isinstance(a, Exception):
            raise a
        return a
    assert wait_for("a pod", fn, timeout=5, every=0) == ["pod"]


def test_wait_for_names_what_it_awaited_and_the_last_answer():
    with pytest.raises(AssertionError, match=r"timed out after 0.2s waiting for the run; last: ConnectionError"):
        wait_for("the run", flaky(99, ConnectionError("refused"))[0], timeout=0.2, every=0.05)

"""invtools.api.details: order, laziness, bounded look-ahead, context, and how a batch stops.

Pure threading, no HTTP: calls block on events the test sets, so nothing waits on timing.
"""

from __future__ import annotations

import contextvars
import itertools
import threading
from contextlib import closing

import pytest

from invtools._clock import current_cancel
from invtools.api.details import fanout

SOON = 5.0  # seconds: a deadline for things that happen at once, never a wait for timing


def test_results_come_back_in_input_order_whatever_order_the_calls_finish_in():
    gates = {n: threading.Event() for n in range(6)}

    def call(n):
        assert gates[n].wait(SOON)
        return n * 10

    # Finish the calls in reverse order: the results still come back in input order.
    opener = threading.Thread(target=lambda: [gates[n].set() for n in reversed(range(6))])
    results = fanout(call, range(6), workers=6)
    opener.start()
    assert list(results) == [0, 10, 20, 30, 40, 50]
    opener.join()


def test_calls_overlap_up_to_workers():
    running, most, lock = 0, 0, threading.Lock()
    all_in = threading.Barrier(4, timeout=SOON)  # breaks (fails the calls) unless 4 overlap

    def call(n):
        nonlocal running, most
        with lock:
            running += 1
            most = max(most, running)
        if n < 4:
            all_in.wait()
        with lock:
            running -= 1
        return n

    assert list(fanout(call, range(12), workers=4)) == list(range(12))
    assert most == 4


def test_items_are_read_lazily_and_only_a_bounded_number_ahead():
    taken = []

    def endless():
        for n in itertools.count():
            taken.append(n)
            yield n

    with closing(fanout(lambda n: n, endless(), workers=2, ahead=5)) as results:
        assert [next(results) for _ in range(3)] == [0, 1, 2]
        # 3 handed back, at most 5 submitted and not handed back, +1 read when a slot freed
        assert len(taken) <= 3 + 5 + 1
    assert len(taken) <= 3 + 5 + 1  # closing read nothing more


def test_each_call_runs_in_a_copy_of_the_callers_context_with_the_cancel_event():
    var = contextvars.ContextVar("var", default="unset")
    var.set("caller's")
    stop = threading.Event()
    seen = list(fanout(lambda n: (var.get(), current_cancel()), range(3), workers=2, cancel=stop))
    assert seen == [("caller's", stop)] * 3
    assert current_cancel() is None and not stop.is_set()  # the caller's own context untouched


def test_a_failing_call_stops_the_batch_at_once_even_while_an_earlier_call_runs():
    stop = threading.Event()
    first_started, later_started = threading.Event(), []

    def call(n):
        if n == 0:
            first_started.set()
            assert stop.wait(SOON), "the batch never told the first call to stop"
            return "first"
        if n == 1:
            assert first_started.wait(SOON)
            raise ValueError("call 1 failed")
        later_started.append(n)
        return n

    got = []
    with pytest.raises(ValueError, match="call 1 failed"):
        for r in fanout(call, range(50), workers=2, ahead=4, cancel=stop):
            got.append(r)
    # Raised while call 0 was still running (it only returns once the batch is stopped).
    assert got == [] and stop.is_set()
    assert len(later_started) <= 4  # the calls not started were cancelled, not run


def test_leaving_the_loop_early_stops_the_batch():
    stop = threading.Event()
    calls = []

    def call(n):
        calls.append(n)
        return n

    for n in fanout(call, range(1000), workers=2, ahead=4, cancel=stop):
        if n == 2:
            break
    assert stop.is_set()
    assert len(calls) <= 2 + 4 + 1


def test_an_exception_in_the_callers_code_stops_the_batch():
    stop = threading.Event()
    with pytest.raises(KeyError):
        with closing(fanout(lambda n: n, range(1000), workers=2, cancel=stop)) as results:
            for n in results:
                if n == 1:
                    raise KeyError("the caller's own bug")
    assert stop.is_set()


def test_a_batch_inside_a_stopped_batch_stops_too():
    # Details fetched by one worker of a larger batch (a team of each_team): stopping the
    # larger batch stops the inner one, whose workers run in a cancel scope of their own.
    from invtools._clock import cancel_scope
    from invtools.errors import Cancelled

    outer, inner = threading.Event(), threading.Event()
    started = threading.Event()

    def call(n):
        started.set()
        assert inner.wait(SOON), "the inner batch never told its calls to stop"
        return n

    threading.Thread(target=lambda: started.wait(SOON) and outer.set()).start()
    with cancel_scope(outer), pytest.raises(Cancelled):
        list(fanout(call, range(10), workers=2, cancel=inner))
    assert inner.is_set()


def test_bad_workers_are_refused():
    for bad in (0, -1, True, 2.0):
        with pytest.raises(ValueError, match="workers"):
            list(fanout(lambda n: n, [1], workers=bad))

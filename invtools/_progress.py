"""The one way invtools shows progress: ``tqdm.auto`` bars (a widget in a notebook, text in a
terminal).

:func:`progress_bar` is a bar over a known number of steps (detail requests), which shows the
time left, or an open-ended one (the pages of a list walk, shown once the walk is longer than
a few pages, so short walks stay silent).

When a bar closes, a terminal's line is cleared. A notebook's widget gives way to one line of
text, the bar's state at that moment ("transaction details: 2547/2547 [00:42, 60.64
details/s]", or "stopped at 1200/2547" after Ctrl-C or an error): a widget's plain-text
fallback is captured when it is first shown, so a saved or exported notebook would otherwise
keep "0/2547" for good. ``tqdm.auto`` (and IPython) are imported on first use: in a notebook
they pull in ipywidgets, and ``import invtools`` must stay light. Imports nothing of invtools.

A call's ``progress=`` decides all it shows, its bars and its notices (:func:`shows`): its own
``progress`` when given, else the setting of the :func:`for_team` run it is part of
(``invtools.each_team``), else its client's. A notice (:func:`notice`, one line on stderr)
inside a :func:`for_team` run names the team it is for.

>>> final_text(total=2547, n=2547, elapsed=42.0, prefix="transaction details", unit=" details")
'transaction details: 2547/2547 [00:42, 60.64 details/s]'
>>> final_text(n=316, initial=300, elapsed=0.5, prefix="/v1/items", unit=" rows", postfix="pages=4")
'/v1/items: 316 rows [00:00, 32.00 rows/s, pages=4]'
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import sys
from collections.abc import Iterator
from typing import Any

__all__ = ["progress_bar", "final_text", "for_team", "shows", "notice"]

#: The team run this context is part of: (its name, whether its calls show progress; None:
#: as their clients say).
_team: contextvars.ContextVar[tuple[str, bool | None] | None] = contextvars.ContextVar(
    "invtools_team_run", default=None
)


@contextlib.contextmanager
def for_team(name: str, *, show: bool | None) -> Iterator[None]:
    """Within: the calls of team ``name``'s part of a run over several teams. Their notices name
    the team; ``show`` is whether a call that does not say shows its notices (None: as its
    client says).

    >>> with for_team("york", show=True):
    ...     shows(None, client=False), shows(False, client=True)
    (True, False)
    >>> shows(None, client=False)
    False
    """
    token = _team.set((name, show))
    try:
        yield
    finally:
        _team.reset(token)


def shows(progress: bool | None, *, client: bool) -> bool:
    """Whether a call shows its notices: its own ``progress`` when given (not None), else its
    team run's setting (:func:`for_team`), else its ``client``'s."""
    if progress is not None:
        return progress
    run = _team.get()
    return client if run is None or run[1] is None else run[1]


def notice(line: str) -> None:
    """``line`` on stderr, at once, a line of its own beside any bar being drawn; inside a
    :func:`for_team` run, after the team's name.

    >>> import contextlib, io
    >>> with contextlib.redirect_stderr(io.StringIO()) as err, for_team("york", show=True):
    ...     notice("600 transaction details to fetch")
    >>> err.getvalue().splitlines()
    ['york: 600 transaction details to fetch']
    """
    run = _team.get()
    text = line if run is None else f"{run[0]}: {line}"
    shown = sys.modules.get("tqdm")  # imported only once a bar has been shown
    if shown is None:
        print(text, file=sys.stderr, flush=True)
    else:  # the bars on the terminal's line (another team's, under each_team) drawn around it
        shown.tqdm.write(text, file=sys.stderr)
        sys.stderr.flush()


def progress_bar(
    *,
    total: int | None = None,
    desc: str | None = None,
    unit: str = " req",
    enabled: bool = True,
    initial: int = 0,
) -> Any:
    """A ``tqdm.auto`` bar; when not ``enabled`` or there is nothing to do, a silent
    :class:`Silent` one, without importing tqdm (0.06 s of a cached re-run that shows nothing).

    >>> with progress_bar(total=3, enabled=False) as bar:
    ...     bar.update(3)
    """
    if not enabled or total == 0:
        return Silent()
    from tqdm.auto import tqdm

    bar: type = tqdm
    widgets = sys.modules.get("tqdm.notebook")  # imported by tqdm.auto only in a kernel
    if widgets is not None and issubclass(tqdm, widgets.tqdm_notebook):
        bar = _notebook_bar(tqdm)
    return bar(
        total=total,
        desc=desc or None,
        unit=unit,
        initial=initial,
        leave=False,
        dynamic_ncols=True,
    )


class Silent:
    """A bar that shows nothing: what :func:`progress_bar`'s callers use of a tqdm bar."""

    def __enter__(self) -> Silent:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def update(self, n: float = 1) -> None:
        """Nothing to show."""

    def set_postfix(self, *args: Any, **kwargs: Any) -> None:
        """Nothing to show."""

    def close(self) -> None:
        """Nothing to close."""


def final_text(
    *,
    n: int,
    total: int | None = None,
    elapsed: float,
    prefix: str | None = "",
    unit: str = "",
    initial: int = 0,
    postfix: str | None = None,
    **_: Any,
) -> str:
    """What a closed bar says: the count, the time taken and the average rate over it (not the
    last moments' rate, nor a time left); a bar closed short of its total says "stopped at".
    Takes a bar's ``format_dict`` (the other keys in it are not used).

    >>> final_text(total=2547, n=1200, elapsed=20.0, prefix="transaction details", unit=" details")
    'transaction details: stopped at 1200/2547 [00:20, 60.00 details/s]'
    """
    from tqdm.std import tqdm

    rate = (n - initial) / elapsed if elapsed else 0.0
    rate_fmt = f"{rate:.2f}{unit}/s" if rate else f"?{unit}/s"
    count = f"{n}/{total}" if total else f"{n}{unit}"
    if total and n < total:
        count = f"stopped at {count}"
    tail = f", {postfix}" if postfix else ""
    head = f"{prefix}: " if prefix else ""
    return f"{head}{count} [{tqdm.format_interval(elapsed)}, {rate_fmt}{tail}]"


@functools.cache
def _notebook_bar(widget_bar: type) -> type:
    """``widget_bar`` (``tqdm.notebook``'s), displayed under a handle that its closing points at
    its last state as plain text (the only representation the saved notebook keeps)."""
    from IPython.display import Pretty, display

    class NotebookBar(widget_bar):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            self._handle = None
            super().__init__(*args, display=False, **kwargs)
            if not self.disable:
                self._handle = display(self.container, display_id=True)
                self.displayed = True

        def close(self) -> None:
            handle, self._handle = getattr(self, "_handle", None), None
            if handle is None or self.disable:
                return super().close()
            # Read before closing: the elapsed time stops here.
            text = final_text(**self.format_dict)
            # Often called while an error or Ctrl-C is on its way (a `with`, a `finally`): a
            # display that fails must not replace it. The widget then stays as tqdm leaves it.
            with contextlib.suppress(Exception):
                handle.update(Pretty(text))  # text only: no widget, no HTML
            super().close()
            self.container.close()  # shown nowhere any more

    return NotebookBar

"""Small controls the widgets share: :class:`TypeChoice`, the transaction types as checkboxes.

A multiple-choice list (``SelectMultiple``) needs Ctrl-click to pick several types and, at
four rows, clipped its first row in JupyterLab; four checkboxes in a row show every type and
its state at a glance and take one click each.

>>> types = TypeChoice()
>>> types.value
('in', 'out', 'move', 'adjust')
>>> types.boxes["move"].value = False          # what unticking "move" does
>>> types.value
('in', 'out', 'adjust')
"""

from __future__ import annotations

from collections.abc import Iterable

import ipywidgets as widgets
import traitlets

from invtools._types import TX_TYPES

__all__ = ["TypeChoice", "inline_label"]


def inline_label(text: str) -> widgets.Label:
    """A control's name, in the column and width of the descriptions of ipywidgets' inline
    controls (Dropdown, DatePicker): put it before a control whose own description would not
    stay on its row (``ToggleButtons`` draws its description above its buttons in
    JupyterLab 4).

    >>> label = inline_label("Per")
    >>> label.value, label.layout.justify_content
    ('Per', 'flex-end')
    """
    return widgets.Label(
        text,
        layout=widgets.Layout(
            width="var(--jp-widgets-inline-label-width, 80px)",
            justify_content="flex-end",
            margin="0 8px 0 0",
            flex="0 0 auto",
        ),
    )


class TypeChoice(widgets.HBox):
    """Transaction types to count, one checkbox each: ``value`` is the tuple of the ticked
    ones, in the order of ``options`` (in, out, move, adjust; set it from code too; observe it
    like any widget's ``value``). ``boxes`` maps each type to its ``Checkbox``.

    >>> choice = TypeChoice(value=("out",))
    >>> [box.value for box in choice.boxes.values()]
    [False, True, False, False]
    >>> choice.value = ("adjust", "in")
    >>> choice.value, choice.boxes["adjust"].value
    (('in', 'adjust'), True)
    """

    # Not synced: the checkboxes are what the browser sees (and what a saved notebook keeps).
    value = traitlets.Tuple()

    def __init__(self, value: Iterable[str] | None = None) -> None:
        self.options = TX_TYPES
        self._syncing = False
        chosen = self.options if value is None else tuple(value)
        # Never narrower than its name: in a narrow output (the docs site) the row wraps.
        look = {
            "indent": False,
            "layout": {"width": "auto", "margin": "0 1.2em 0 0", "flex": "0 0 auto"},
        }
        self.boxes = {
            kind: widgets.Checkbox(value=kind in chosen, description=kind, **look)
            for kind in self.options
        }
        # The label: the same width and alignment as the descriptions of the controls above it.
        super().__init__(
            children=[inline_label("Types"), *self.boxes.values()],
            layout={"align_items": "center", "flex": "0 0 auto"},
        )
        self.value = chosen
        for box in self.boxes.values():
            box.observe(self._on_box, names="value")
        self.observe(self._on_value, names="value")

    @traitlets.validate("value")
    def _valid(self, proposal: dict) -> tuple[str, ...]:
        wanted = tuple(proposal["value"])
        unknown = [v for v in wanted if v not in self.options]
        if unknown:
            raise traitlets.TraitError(
                f"{unknown!r} is not a transaction type here; choose from {self.options!r}"
            )
        return tuple(kind for kind in self.options if kind in wanted)

    def _on_box(self, _change: dict) -> None:
        if not self._syncing:
            self.value = tuple(kind for kind, box in self.boxes.items() if box.value)

    def _on_value(self, change: dict) -> None:
        # Ticking the boxes one by one must not report each step as a new value.
        self._syncing = True
        try:
            for kind, box in self.boxes.items():
                box.value = kind in change["new"]
        finally:
            self._syncing = False

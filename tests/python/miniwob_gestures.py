"""Scripted MiniWoB++ solvers that hover (``move``), drag (``drag`` along a path) and press
chords or modifier clicks (``press``, ``click`` with ``modifiers``): the same reading as
``miniwob_solvers`` (the instruction, the text layer, the picture), acting in picture pixels.
Imported by ``miniwob_solvers``, whose ``SOLVERS`` they join.
"""

from __future__ import annotations

from miniwob_solvers import Page, Run, quoted, solver


def settled(page: Page, text: str, tries: int = 4) -> Run:
    """The run ``text`` in the task's area, reading the page again (after a ``wait``) while an
    opening menu or a moving page has not drawn it yet."""
    for _ in range(tries):
        found = next((run for run in page.task_runs() if run.text == text), None)
        if found or page.done:
            return found
        page.act(op="wait")
    raise LookupError(f"{text!r} is not on the page: {page.instruction}")


# Hovering.


@solver("miniwob.click-menu")
def click_menu(page: Page) -> None:
    # "Select A>B>C": hovering over A opens its submenu (after the menu's delay), B's opens C's;
    # the leaf is clicked.
    path = page.instruction.removeprefix("Select ").split(">")
    for name in path[:-1]:
        item = settled(page, name)
        page.act(op="move", x=item.centre[0], y=item.centre[1])
    page.click(settled(page, path[-1]))


# The icons the instruction may name instead of a label (jQuery UI's icon names), by label.
MENU_ICONS = {
    "ui-icon-disk": "Save",
    "ui-icon-seek-start": "Prev",
    "ui-icon-stop": "Stop",
    "ui-icon-play": "Play",
    "ui-icon-seek-end": "Next",
    "ui-icon-zoomin": "Zoom In",
    "ui-icon-zoomout": "Zoom Out",
}


@solver("miniwob.click-menu-2")
def click_menu_2(page: Page) -> None:
    # The "Menu" button opens the menu; the playback items are in a submenu that opens while
    # the pointer is over "Playback".
    named = quoted(page.instruction, -1)
    label = MENU_ICONS.get(named, named)
    page.click(page.find("Menu", "button"))
    if label in ("Prev", "Stop", "Play", "Next"):
        playback = settled(page, "Playback")
        page.act(op="move", x=playback.centre[0], y=playback.centre[1])
    page.click(settled(page, label))

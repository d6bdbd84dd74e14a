"""Scripted MiniWoB++ solvers that hover (``move``), drag (``drag`` along a path) and press
chords or modifier clicks (``press``, ``click`` with ``modifiers``): the same reading as
``miniwob_solvers`` (the instruction, the text layer, the picture), acting in picture pixels.
Imported by ``miniwob_solvers``, whose ``SOLVERS`` they join.
"""

from __future__ import annotations

import re

from miniwob_solvers import Page, Run, find_word_run, picture, quoted, solver


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


# Dragging.


def grey_box(image, area: tuple[int, int, int, int], low: int, high: int):
    """The bounding box (left, top, right, bottom) of the grey pixels (r = g = b in low..high)
    of ``area`` of the picture, or None."""
    left, top, right, bottom = area
    xs, ys = [], []
    for y in range(top, bottom):
        for x in range(left, right):
            r, g, b = image.getpixel((x, y))
            if r == g == b and low <= r <= high:
                xs.append(x)
                ys.append(y)
    return (min(xs), min(ys), max(xs), max(ys)) if xs else None


@solver("miniwob.use-slider")
def use_slider(page: Page) -> None:
    wanted = int(re.search(r"Select (-?\d+)", page.instruction).group(1))
    value = next(run for run in page.task_runs() if re.fullmatch(r"-?\d+", run.text))
    set_slider(page, (0, 125, value.x, page.find("Submit", "button").y), value, wanted)
    page.submit()


@solver("miniwob.use-slider-2")
def use_slider_2(page: Page) -> None:
    # Three sliders, each over its printed value.
    combination = [int(n) for n in re.search(r"\[([-\d,]+)\]", page.instruction).group(1).split(",")]
    values = [run for run in page.task_runs() if re.fullmatch(r"-?\d+", run.text) and run.y > 150]
    above = 130
    for value, wanted in zip(values, combination):
        set_slider(page, (0, above, 400, value.y + 2), value, wanted)
        above = value.y + value.height
    page.submit()


def set_slider(page: Page, area: tuple[int, int, int, int], value: Run, wanted: int) -> None:
    """Set jQuery UI's slider drawn in ``area`` of the picture (a track with a grey border, its
    handle filled a lighter grey) to ``wanted``, its value printed as the run ``value``. Holding
    the handle, the pointer goes near the track's end on the side of ``wanted`` (the value grows
    with x, or as y falls on an upright slider), then to the point the two values read put
    ``wanted`` at: the value is linear in the pointer's travel."""

    def shown() -> int:
        return int(next(run.text for run in page.task_runs() if run.y == value.y and run.x == value.x))

    now = shown()
    if now == wanted:
        return
    image = picture(page)
    track = grey_box(image, area, 185, 210)
    handle = grey_box(image, area, 240, 250)
    grab = ((handle[0] + handle[2]) // 2, (handle[1] + handle[3]) // 2)
    upright = track[3] - track[1] > track[2] - track[0]
    axis = 1 if upright else 0
    # Inside the track's ends, where the value is not yet held at the slider's bounds.
    ends = (track[1] + 15, track[3] - 15) if upright else (track[0] + 15, track[2] - 15)

    def at(p: float) -> tuple[int, int]:
        p = round(p)
        return (grab[0], p) if upright else (p, grab[1])

    # A press on the track rather than the handle moves the handle there: the value read again.
    page.act(op="mouse_down", x=grab[0], y=grab[1])
    now = shown()
    grows_up = (wanted > now) != upright
    far = ends[1] if grows_up else ends[0]
    page.act(op="move", x=at(far)[0], y=at(far)[1])
    there = shown()
    point = at(far)
    if there != wanted and there != now:
        point = at(grab[axis] + (far - grab[axis]) * (wanted - now) / (there - now))
        page.act(op="move", x=point[0], y=point[1])
    page.act(op="mouse_up", x=point[0], y=point[1])
    # The pointer lands on whole page pixels: on a short slider over a wide range a value can
    # fall between two of them. The handle keeps the focus: its arrow keys step by one.
    for _ in range(3):
        off = wanted - shown()
        if off == 0:
            break
        page.act(op="press", text="UP" if off > 0 else "DOWN", repeat=min(abs(off), 20))


def ordinal_place(words: str, current: int, count: int) -> int:
    """The 0-based place "to the top.", "to the bottom.", "down/up by one position." or "to the
    3rd position." names, for an item now at ``current`` of ``count``."""
    if "top" in words:
        return 0
    if "bottom" in words:
        return count - 1
    if "down by one" in words:
        return current + 1
    if "up by one" in words:
        return current - 1
    return int(re.search(r"(\d+)(?:st|nd|rd|th)", words).group(1)) - 1


@solver("miniwob.drag-items")
def drag_items(page: Page) -> None:
    # A jQuery UI sortable list: the item carried over the row of the place it should take, a
    # little past that row's middle so that the list makes room there.
    name, words = re.match(r"Drag (\S+) (.*)", page.instruction).groups()
    rows = [run for run in page.task_runs() if not run.marker]
    current = [run.text for run in rows].index(name)
    move_row(page, rows, current, ordinal_place(words, current, len(rows)))


def paragraphs(page: Page) -> list[list[Run]]:
    """The task area's lines of text, in paragraphs: a gap wider than a line between two."""
    groups: list[list[Run]] = []
    for run in (run for run in page.task_runs() if not run.marker):
        if groups and run.y - groups[-1][-1].y <= run.height + 4:
            groups[-1].append(run)
        else:
            groups.append([run])
    return groups


def highlight(page: Page, lines: list[Run]) -> None:
    """A press just before the first line's first letter, a release just after the last's last."""
    first, last = lines[0], lines[-1]
    page.drag((first.x - 2, first.centre[1]), (last.x + last.width + 2, last.centre[1]), points=8)


@solver("miniwob.highlight-text")
def highlight_text(page: Page) -> None:
    highlight(page, [run for run in page.task_runs() if not run.marker])
    page.submit()


@solver("miniwob.highlight-text-2")
def highlight_text_2(page: Page) -> None:
    place = int(re.search(r"the (\d+)(?:st|nd|rd|th) paragraph", page.instruction).group(1))
    highlight(page, paragraphs(page)[place - 1])
    page.submit()


def drawn_box(image, area: tuple[int, int, int, int]):
    """The bounding box (left, top, right, bottom) of what is drawn (not white) in ``area``."""
    left, top, right, bottom = area
    xs, ys = [], []
    for y in range(top, bottom, 2):
        for x in range(left, right, 2):
            if min(image.getpixel((x, y))) < 200:
                xs.append(x)
                ys.append(y)
    return (min(xs), min(ys), max(xs), max(ys)) if xs else None


STEPS = {"up": (0, -1), "down": (0, 1), "left": (-1, 0), "right": (1, 0)}


@solver("miniwob.drag-single-shape")
def drag_single_shape(page: Page) -> None:
    # The one shape drawn above the Submit button, grabbed at the middle of its outline and
    # carried 50 pixels the way the instruction says.
    way = STEPS[re.search(r"Drag the item (\w+)", page.instruction).group(1)]
    # (The button's border is drawn some 20 pixels above its label's line.)
    shape = drawn_box(picture(page), (0, 125, 400, page.find("Submit", "button").y - 25))
    grab = ((shape[0] + shape[2]) // 2, (shape[1] + shape[3]) // 2)
    page.drag(grab, (grab[0] + 50 * way[0], grab[1] + 50 * way[1]))
    page.submit()


# Chords and modifier clicks.


def option_labels(page: Page, point: tuple[int, int]) -> list[str]:
    """The options of the <select> at ``point``, in order, as the server names them when asked
    to choose one that is not there (the option lines of a list box are not in the text layer)."""
    page.act(op="select", x=point[0], y=point[1], text="\u2205 none of them")
    detail = page.result.observation.metadata["error_detail"]
    return re.findall(r'"([^"]*)"', detail.split("its options: ", 1)[1])


@solver("miniwob.click-scroll-list")
def click_scroll_list(page: Page) -> None:
    # A multiple-choice list box a few rows high: each wanted option CTRL-clicked on its row.
    # Rows are as tall as the gap between the text lines drawn in the box; a row out of sight
    # is scrolled to the box's middle (the wheel moves the box's content by `dy` pixels).
    names = re.match(r"Select (.*) from the scroll list", page.instruction).group(1).split(", ")
    image = picture(page)
    submit = page.find("Submit", "button")
    left, top, right, bottom = grey_box(image, (0, 125, 400, submit.y - 20), 100, 140)
    inside, end = top + 3, bottom - 3
    inked = [y for y in range(inside, end)
             if any(min(image.getpixel((x, y))) < 100 for x in range(left + 5, left + 150))]
    starts = [y for y in inked if y - 1 not in inked]
    pitch = (starts[-1] - starts[0]) / (len(starts) - 1)
    middle = ((left + right) // 2, (top + bottom) // 2)
    labels = option_labels(page, middle)
    most = max(0, round(len(labels) * pitch - (end - inside)))
    scrolled = 0
    for place in sorted(labels.index(name) for name in names):
        row = inside + (place + 0.5) * pitch
        if row - pitch / 2 - scrolled < inside or row + pitch / 2 - scrolled > end:
            wanted = min(most, max(0, round(row - middle[1])))
            page.act(op="scroll", x=middle[0], y=middle[1], dy=wanted - scrolled)
            scrolled = wanted
        page.act(op="click", x=middle[0] - 40, y=round(row - scrolled), modifiers=["CTRL"])
    page.submit()


# Quill's own shortcuts for the styles the text editor task names.
STYLE_CHORDS = {"bold": "CTRL+B", "italics": "CTRL+I", "underlined": "CTRL+U"}


def select_word(page: Page, word: str) -> None:
    """Select ``word`` of the text: a double click on it selects its letters, SHIFT+RIGHT adds
    the punctuation after them (a double click leaves it out)."""
    at = find_word_run(page, word)
    if at is None:
        raise LookupError(f"{word!r} is not on the page: {page.instruction}")
    page.act(op="click", x=at[0], y=at[1], count=2)
    trailing = len(word) - len(word.rstrip(".,;:!?"))
    if trailing:
        page.act(op="press", text="SHIFT+RIGHT", repeat=trailing)


@solver("miniwob.text-editor")
def text_editor(page: Page) -> None:
    # The text (one word, or all of it) selected in the editor, then the style's shortcut, or
    # the toolbar's colour picker and the swatch drawn nearest the colour named.
    asked = re.search(
        r"(?:give|make) (?:the text (\S+)|everything) the (style|color) (\w+)", page.instruction
    )
    word, kind, name = asked.groups()
    text = next(run for run in page.task_runs() if not run.marker and run.y > 150)
    if word:
        select_word(page, word)
    else:
        page.click(text)
        page.press("CTRL+A")
    if kind == "style":
        page.press(STYLE_CHORDS[name])
    else:
        pick_colour(page, name, text)
    page.submit()


# The first swatch of each colour the text editor task names, as Quill's picker draws it.
SWATCHES = {
    "red": (230, 0, 0),
    "orange": (255, 153, 0),
    "yellow": (255, 255, 0),
    "green": (0, 138, 0),
    "blue": (0, 102, 204),
    "purple": (153, 51, 255),
}


def pick_colour(page: Page, name: str, text: Run) -> None:
    """Open the colour picker (the toolbar's first glyph, above the text) and click the middle
    of the swatch drawn in the colour ``name``."""
    image = picture(page)
    toolbar = drawn_box(image, (0, 130, 80, text.y - 20))
    page.click(((toolbar[0] + toolbar[2]) // 2, (toolbar[1] + toolbar[3]) // 2))
    image = picture(page)
    wanted = SWATCHES[name]
    spots = [(x, y) for y in range(toolbar[3], 600) for x in range(0, 400)
             if image.getpixel((x, y)) == wanted]
    if not spots:
        raise LookupError(f"no {name} swatch drawn: {page.instruction}")
    xs, ys = [x for x, _ in spots], [y for _, y in spots]
    page.click(((min(xs) + max(xs)) // 2, (min(ys) + max(ys)) // 2))


@solver("miniwob.copy-paste-2")
def copy_paste_2(page: Page) -> None:
    # The named text area's text copied (CTRL+A, CTRL+C in it) and pasted (CTRL+V) into the
    # empty text input, the box drawn between the last text area and the Submit button (an empty
    # field is not in the text layer).
    place = int(re.search(r"the (\d+)(?:st|nd|rd|th) text area", page.instruction).group(1))
    areas = [run for run in page.task_runs() if run.marker == "field"]
    submit = page.find("Submit", "button")
    page.click(areas[place - 1])
    page.press("CTRL+A")
    page.press("CTRL+C")
    last = areas[-1]
    field = drawn_box(picture(page), (0, last.y + last.height + 12, 400, submit.y - 20))
    page.click(((field[0] + field[2]) // 2, (field[1] + field[3]) // 2))
    page.press("CTRL+V")
    page.submit()


def move_row(page: Page, rows: list[Run], current: int, place: int) -> None:
    """Carry the sortable list's row ``current`` to ``place``: over the row there, a little past
    its middle so that the list makes room."""
    item, there = rows[current], rows[place]
    past = 12 if place > current else -12
    page.drag(item.centre, (item.centre[0], there.centre[1] + past), points=12)


@solver("miniwob.drag-sort-numbers")
def drag_sort_numbers(page: Page) -> None:
    # A selection sort: the least of the rows not yet in place carried to the first of them,
    # the list read again after each move.
    count = len([run for run in page.task_runs() if re.fullmatch(r"-?\d+", run.text)])
    for place in range(count - 1):
        rows = [run for run in page.task_runs() if re.fullmatch(r"-?\d+", run.text)]
        values = [int(run.text) for run in rows]
        least = min(range(place, len(rows)), key=lambda i: values[i])
        if least != place:
            move_row(page, rows, least, place)
    page.submit()


GRID_PLACES = ["top left", "top center", "top right", "center left", "center", "center right",
               "bottom left", "bottom center", "bottom right"]
GRID_STEPS = {"up": -3, "down": 3, "left": -1, "right": 1}


@solver("miniwob.drag-items-grid")
def drag_items_grid(page: Page) -> None:
    # A 3 by 3 sortable grid (the list's order read left to right, top to bottom): the item
    # carried onto the cell of its place, a little past the cell's middle along that order. A
    # cell is some 100 pixels square, its name at its top left.
    name, words = re.match(r"Drag (\S+) (?:to the )?(.*)\.$", page.instruction).groups()
    cells = [run for run in page.task_runs() if not run.marker]
    current = [run.text for run in cells].index(name)
    step = re.match(r"(up|down|left|right) by one", words)
    place = current + GRID_STEPS[step.group(1)] if step else GRID_PLACES.index(words)
    item, there = cells[current], cells[place]
    # The grid puts the item after the cell it is over when the pointer last moved right, before
    # it when left: the cell is entered from the side the item comes from in the list's order.
    way = 1 if place > current else -1
    start, middle = (item.x + 40, item.y + 35), (there.x + 40, there.y + 35)
    side = (middle[0] - 35 * way, middle[1])
    path = [[round(start[0] + (side[0] - start[0]) * i / 8),
             round(start[1] + (side[1] - start[1]) * i / 8)] for i in range(9)]
    path += [[side[0] + 15 * way * i, side[1]] for i in range(1, 5)]
    page.act(op="drag", path=path)

"""Scripted solvers for MiniWoB++ tasks, acting as an agent would: they read the instruction the
server gives at reset (``metadata.task.instruction``) and the page's text layer (``read_page``:
``x,y,w,h [marker] text`` lines, boxes in picture pixels), and act in picture pixels through the
typed client (``BrowserClient``). Nothing reads the page's DOM or its scripts.

A solver is a function of a ``Page`` registered with ``@solver("miniwob.task-id")``. Tasks that
need an operation the server does not have yet are listed in ``WAITING`` with that operation; once
it exists, their solver is a few lines calling ``page.act(op=..., ...)`` (any ``BrowserAction``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Optional

from browserenv import BrowserAction

SOLVERS: dict[str, Callable[["Page"], None]] = {}

# Tasks no scripted solver here solves yet, by the operation their solver would use (`drag`,
# `press` chords, `move` for hovering); the operations exist, the solvers are still to write.
WAITING: dict[str, str] = {
    "miniwob.drag-circle": "drag",
    "miniwob.drag-cube": "drag",
    "miniwob.drag-shapes": "drag",
    "miniwob.drag-shapes-2": "drag",
    "miniwob.draw-circle": "drag",
    "miniwob.draw-line": "drag",
    "miniwob.resize-textarea": "drag",
}


def solver(task_id: str):
    def register(solve: Callable[["Page"], None]):
        SOLVERS[task_id] = solve
        return solve

    return register


@dataclass
class Run:
    """One line of the text layer."""

    x: int
    y: int
    width: int
    height: int
    marker: str
    text: str

    @property
    def centre(self) -> tuple[int, int]:
        return self.x + self.width // 2, self.y + self.height // 2


LINE = re.compile(r"^(-?\d+),(-?\d+),(\d+),(\d+)(?: \[([a-z_]+)\])?(?: (.*))?$")


def parse_runs(text: str) -> list[Run]:
    runs = []
    for line in text.splitlines():
        match = LINE.match(line)
        if match:
            x, y, w, h, marker, said = match.groups()
            runs.append(Run(int(x), int(y), int(w), int(h), marker or "", said or ""))
    return runs


class Page:
    """An episode as a solver drives it: what it reads and the actions it takes, kept in order
    (``actions``, ``screenshots``) so that a run can be played again."""

    def __init__(self, env, task_id: str, seed: int):
        self.env = env
        self.task_id = task_id
        self.seed = seed
        self.actions: list[BrowserAction] = []
        self.result = env.reset(task_id=task_id, seed=seed)
        self.instruction: str = self.result.observation.metadata["task"]["instruction"]
        self.screenshots: list[str] = [self.result.observation.screenshot]

    # What the page shows.

    def runs(self) -> list[Run]:
        return parse_runs(self.env.read_page().text)

    def find(self, text: str, marker: Optional[str] = None, exact: bool = True, below: int = 0) -> Run:
        """The first run (in reading order, below the picture row ``below``) whose text is
        ``text`` (or contains it), of the given marker."""
        for run in self.runs():
            if run.y < below or (marker is not None and run.marker != marker):
                continue
            if run.text == text if exact else text in run.text:
                return run
        raise LookupError(f"{text!r} ({marker}) is not on the page: {self.instruction}")

    def task_runs(self) -> list[Run]:
        """The runs of the task's area, under the instruction (the yellow band, 125 pixels)."""
        return [run for run in self.runs() if run.y >= 125]

    @property
    def done(self) -> bool:
        return bool(self.result.done)

    @property
    def reward(self) -> float:
        return float(self.result.reward or 0.0)

    # What it does.

    def act(self, **fields) -> None:
        if self.done:
            return
        action = BrowserAction(**fields)
        self.actions.append(action)
        self.result = self.env.step(action)
        self.screenshots.append(self.result.observation.screenshot)

    def click(self, target) -> None:
        x, y = target.centre if isinstance(target, Run) else target
        self.act(op="click", x=x, y=y)

    def type(self, text: str) -> None:
        self.act(op="type", text=text)

    def key(self, name: str) -> None:
        self.act(op="key", text=name)

    def scroll(self, dy: int) -> None:
        self.act(op="scroll", dy=dy)

    def press(self, chord: str) -> None:
        self.act(op="press", text=chord)

    def drag(self, start: tuple[int, int], end: tuple[int, int], points: int = 6) -> None:
        """Press at ``start``, move in a line through ``points`` points, release at ``end``."""
        path = [
            [round(start[0] + (end[0] - start[0]) * i / (points - 1)),
             round(start[1] + (end[1] - start[1]) * i / (points - 1))]
            for i in range(points)
        ]
        self.act(op="drag", path=path)

    def submit(self, label: str = "Submit") -> None:
        self.click(self.find(label, "button"))


def quoted(instruction: str, index: int = 0) -> str:
    """The instruction's `index`-th quoted text."""
    return re.findall(r'"([^"]*)"', instruction)[index]


# Click tasks.


@solver("miniwob.click-test")
def click_test(page: Page) -> None:
    # "Click Me!" on one line or two.
    page.click(page.find("Click", "button", exact=False))


@solver("miniwob.click-test-2")
@solver("miniwob.click-test-transfer")
def click_test_2(page: Page) -> None:
    named = re.search(r"button (\w+)\.", page.instruction)
    page.click(page.find(named.group(1) if named else "Click", "button"))


@solver("miniwob.click-button")
@solver("miniwob.unicode-test")
def click_button(page: Page) -> None:
    page.click(page.find(quoted(page.instruction), "button"))


@solver("miniwob.click-button-sequence")
def click_button_sequence(page: Page) -> None:
    first, second = re.findall(r"button (\w+)", page.instruction)
    page.click(page.find(first, "button"))
    page.click(page.find(second, "button"))


@solver("miniwob.click-dialog-2")
def click_dialog_2(page: Page) -> None:
    label = quoted(page.instruction)
    if label == "x":
        click_dialog(page)
    else:
        page.click(page.find(label, "button"))


@solver("miniwob.click-link")
def click_link(page: Page) -> None:
    # The link is a word of the paragraph: the run holding it, at the word's place.
    word = quoted(page.instruction)
    for run in page.task_runs():
        words = run.text.split(" ")
        if word in words:
            # The run's width shared by its characters: the word's middle.
            before = len(" ".join(words[: words.index(word)])) + (1 if words.index(word) else 0)
            per_char = run.width / max(1, len(run.text))
            page.click((int(run.x + per_char * (before + len(word) / 2)), run.centre[1]))
            return
    raise LookupError(word)


@solver("miniwob.click-checkboxes")
@solver("miniwob.click-checkboxes-large")
@solver("miniwob.click-checkboxes-transfer")
@solver("miniwob.click-option")
def click_checkboxes(page: Page) -> None:
    wanted = re.match(r"Select (.*) and click Submit", page.instruction).group(1)
    words = [w.strip() for w in wanted.split(",")] if wanted != "nothing" else []
    runs = page.task_runs()
    for word in words:
        label = next(run for run in runs if run.text == word and not run.marker)
        # A label and its box side by side: the box is left of the label.
        # The box sits left of its label.
        page.click((label.x - 25, label.centre[1]))
    page.submit()


@solver("miniwob.click-tab")
def click_tab(page: Page) -> None:
    number = re.search(r"Tab #(\d+)", page.instruction).group(1)
    page.click(page.find(f"Tab #{number}", "link"))


def find_word_run(page: Page, word: str) -> Optional[tuple[int, int]]:
    """Where a word of a paragraph is, as a point to click: in a link first (the same word may
    be plain text too)."""
    runs = page.task_runs()
    for run in sorted(runs, key=lambda run: run.marker != "link"):
        words = run.text.split(" ")
        if word in words and run.marker in ("", "link"):
            at = words.index(word)
            before = len(" ".join(words[:at])) + (1 if at else 0)
            per_char = run.width / max(1, len(run.text))
            return int(run.x + per_char * (before + len(word) / 2)), run.centre[1]
    return None


@solver("miniwob.click-tab-2")
@solver("miniwob.click-tab-2-easy")
@solver("miniwob.click-tab-2-medium")
@solver("miniwob.click-tab-2-hard")
def click_tab_2(page: Page) -> None:
    word = quoted(page.instruction)
    tabs = [run for run in page.task_runs() if run.marker == "link" and run.y < 200]
    for tab in tabs:
        page.click(tab)
        if page.done:
            return
        at = find_word_run(page, word)
        if at:
            page.click(at)
            return
    raise LookupError(word)


@solver("miniwob.click-collapsible")
@solver("miniwob.click-collapsible-nodelay")
def click_collapsible(page: Page) -> None:
    page.click(page.find("Section", exact=False, below=125))
    page.submit()


@solver("miniwob.click-collapsible-2")
@solver("miniwob.click-collapsible-2-nodelay")
def click_collapsible_2(page: Page) -> None:
    word = quoted(page.instruction)
    count = len([run for run in page.task_runs() if run.text.startswith("Section #")])
    for index in range(1, count + 1):
        page.click(page.find(f"Section #{index}", below=125))
        if page.done:
            return
        at = find_word_run(page, word)
        for _ in range(2):
            if at or page.done:
                break
            # A section still opening on a loaded machine: a moment more, then read again.
            page.act(op="wait")
            at = find_word_run(page, word)
        if at:
            page.click(at)
            return
    raise LookupError(word)


def picture(page: Page):
    """The last screenshot, as Pillow reads it."""
    import base64
    import io

    from PIL import Image

    return Image.open(io.BytesIO(base64.b64decode(page.screenshots[-1]))).convert("RGB")


@solver("miniwob.navigate-tree")
def navigate_tree(page: Page) -> None:
    name = quoted(page.instruction)
    opened: set[tuple[int, int]] = set()
    for _ in range(16):
        runs = page.task_runs()
        target = next((run for run in runs if run.text == name), None)
        if target:
            page.click(target)
            return
        # A folder shows a "+" box about 62 pixels left of its name (a file shows none).
        image = picture(page)
        closed = [
            run
            for run in runs
            if (run.x, run.y) not in opened
            and sum(sum(image.getpixel((run.x - 62 + dx, run.centre[1]))) < 300 for dx in range(-6, 7)) >= 3
        ]
        if not closed:
            break
        opened.add((closed[0].x, closed[0].y))
        page.click((closed[0].x - 62, closed[0].centre[1]))
    raise LookupError(name)


@solver("miniwob.odd-or-even")
def odd_or_even(page: Page) -> None:
    runs = page.task_runs()
    numbers = [run for run in runs if re.fullmatch(r"-?\d+", run.text) and not run.marker]
    for number in numbers:
        kind = "Even" if int(number.text) % 2 == 0 else "Odd"
        button = min(
            (run for run in runs if run.marker == "button" and run.text == kind),
            key=lambda run: abs(run.centre[1] - number.centre[1]),
        )
        page.click(button)
    page.submit()


@solver("miniwob.identify-shape")
def identify_shape(page: Page) -> None:
    # The figure is drawn; its kind is read off the picture's colours in the shape's area.
    image = picture(page)
    # The figure's box: the non-white pixels between the instruction and the buttons.
    pixels = [(x, y) for y in range(130, 310, 2) for x in range(0, 400, 2) if sum(image.getpixel((x, y))) < 600]
    xs = [p[0] for p in pixels]
    ys = [p[1] for p in pixels]
    box_area = (max(xs) - min(xs) + 2) * (max(ys) - min(ys) + 2)
    fill = len(pixels) * 4 / box_area
    text = [run for run in page.task_runs() if run.y < 320 and not run.marker]
    if text:
        kind = "Number" if text[0].text.strip().isdigit() else "Letter"
    elif fill > 0.9:
        kind = "Rectangle"
    elif fill > 0.65:
        kind = "Circle"
    else:
        kind = "Triangle"
    page.click(page.find(kind, "button"))


# Typing tasks: fields are found with TAB (an empty field shows no text).


@solver("miniwob.enter-text")
@solver("miniwob.enter-text-dynamic")
def enter_text(page: Page) -> None:
    page.key("TAB")
    page.type(quoted(page.instruction))
    page.submit()


@solver("miniwob.enter-text-2")
def enter_text_2(page: Page) -> None:
    word = quoted(page.instruction)
    page.key("TAB")
    page.type(word.lower() if "lower" in page.instruction else word.upper())
    page.submit()


@solver("miniwob.enter-password")
def enter_password(page: Page) -> None:
    password = quoted(page.instruction)
    page.key("TAB")
    page.type(password)
    page.key("TAB")
    page.type(password)
    page.submit()


@solver("miniwob.login-user")
def login_user(page: Page) -> None:
    user, password = quoted(page.instruction, 0), quoted(page.instruction, 1)
    page.key("TAB")
    page.type(user)
    page.key("TAB")
    page.type(password)
    page.submit("Login")


@solver("miniwob.focus-text")
def focus_text(page: Page) -> None:
    page.key("TAB")


@solver("miniwob.simple-arithmetic")
def simple_arithmetic(page: Page) -> None:
    problem = next(run for run in page.task_runs() if run.text.endswith("="))
    a, op, b = re.match(r"(-?\d+) ([-+x*]) (-?\d+)", problem.text).groups()
    value = {"+": int(a) + int(b), "-": int(a) - int(b)}.get(op, int(a) * int(b))
    page.key("TAB")
    page.type(str(value))
    page.submit()


@solver("miniwob.simple-algebra")
def simple_algebra(page: Page) -> None:
    problem = next(run for run in page.task_runs() if "=" in run.text and run.text != "x =")
    left, right = problem.text.split("=")
    match = re.match(r"\s*x\s*([-+])\s*(\d+)\s*", left)
    if match:
        sign, number = match.groups()
        value = int(right) - int(number) if sign == "+" else int(right) + int(number)
    else:
        number, sign = re.match(r"\s*(\d+)\s*([-+])\s*x\s*", left).groups()
        value = int(right) - int(number) if sign == "+" else int(number) - int(right)
    page.key("TAB")
    page.type(str(value))
    page.submit()


@solver("miniwob.find-word")
def find_word(page: Page) -> None:
    nth = int(re.search(r"(\d+)(?:st|nd|rd|th) word", page.instruction).group(1))
    words = " ".join(run.text for run in page.task_runs() if not run.marker).split()
    page.key("TAB")
    page.type(words[nth - 1])
    page.submit()


@solver("miniwob.read-table")
def read_table(page: Page) -> None:
    label = re.search(r"value of (.*) into", page.instruction).group(1)
    runs = page.task_runs()
    key = next(run for run in runs if run.text == label)
    value = next(run for run in runs if abs(run.y - key.y) < 5 and run.x > key.x + key.width)
    page.key("TAB")
    page.type(value.text)
    page.submit()


@solver("miniwob.read-table-2")
def read_table_2(page: Page) -> None:
    runs = page.task_runs()
    table = {}
    for key in runs:
        value = next((r for r in runs if r is not key and abs(r.y - key.y) < 5 and r.x > key.x + key.width), None)
        if value and not key.text.endswith(":"):
            table[key.text] = value.text
    fields = [run.text[:-1] for run in runs if run.text.endswith(":")]
    for name in fields:
        page.key("TAB")
        page.type(table[name])
    page.submit()


@solver("miniwob.text-transform")
def text_transform(page: Page) -> None:
    letters = sorted((run for run in page.task_runs() if not run.marker and run.y < 330), key=lambda run: run.x)
    page.key("TAB")
    page.type("".join(run.text for run in letters))
    page.submit()


@solver("miniwob.guess-number")
def guess_number(page: Page) -> None:
    low, high = 0, 9
    while low <= high and not page.done:
        guess = (low + high) // 2
        # The field shows the last guess once there is one; Submit takes the focus away.
        field = next((run for run in page.task_runs() if run.marker == "field"), None)
        if field:
            page.click(field)
        else:
            page.key("TAB")
        page.key("CTRL+A")
        page.type(str(guess))
        page.submit()
        said = " ".join(run.text for run in page.task_runs())
        if "higher" in said:
            low = guess + 1
        elif "lower" in said:
            high = guess - 1
        else:
            return


@solver("miniwob.phone-book")
def phone_book(page: Page) -> None:
    name = re.match(r"Find (.*) in the contact book", page.instruction).group(1)
    field = re.search(r"click on their (\w+)", page.instruction).group(1)
    label = {"phone": "Phone:", "email": "Email:", "address": "Address:"}[field]
    for _ in range(12):
        runs = page.task_runs()
        if any(run.text == name for run in runs):
            key = next(run for run in runs if run.text == label)
            value = next(run for run in runs if abs(run.y - key.y) < 5 and run.x > key.x)
            page.click(value)
            return
        page.click(page.find(">", "link"))
    raise LookupError(name)


@solver("miniwob.search-engine")
def search_engine(page: Page) -> None:
    term = quoted(page.instruction)
    nth = int(re.search(r"the (\d+)(?:st|nd|rd|th) search result", page.instruction).group(1))
    page.key("TAB")
    page.type(term)
    page.submit("Search")
    # Three results a page; the pages' numbers are links under them.
    page_number = (nth - 1) // 3 + 1
    if page_number > 1:
        page.click(page.find(str(page_number), "link"))
    results = [run for run in page.task_runs() if run.marker == "link" and not run.text.isdigit() and run.text not in ("<", ">")]
    page.click(results[(nth - 1) % 3])


@solver("miniwob.choose-list")
def choose_list(page: Page) -> None:
    # The list is a select: focused, its options go by with the arrow keys (no popup needed).
    option = re.match(r"Select (.*) from the list", page.instruction).group(1)
    page.key("TAB")
    for _ in range(16):
        if any(run.marker == "field" and run.text == option for run in page.task_runs()):
            break
        page.key("DOWN")
    page.submit()


@solver("miniwob.use-spinner")
def use_spinner(page: Page) -> None:
    # The page refuses typed digits; the spinner's own keys step it.
    value = int(re.search(r"Select (-?\d+) with", page.instruction).group(1))
    page.click(page.find("0", "field"))
    for _ in range(abs(value)):
        page.key("UP" if value > 0 else "DOWN")
    page.submit()


@solver("miniwob.use-autocomplete")
@solver("miniwob.use-autocomplete-nodelay")
def use_autocomplete(page: Page) -> None:
    start = re.search(r'starts with "([^"]*)"', page.instruction).group(1)
    end = re.search(r'ends with "([^"]*)"', page.instruction)
    page.key("TAB")
    page.type(start)
    if not any(run.text.startswith(start) and run.marker != "field" and run.y > 180 for run in page.task_runs()):
        # The suggestions come after a delay (use-autocomplete): wait for them.
        page.act(op="wait")
    # The suggestions open under the field; DOWN walks them and puts each in the field.
    for _ in range(10):
        page.key("DOWN")
        value = next(run for run in page.task_runs() if run.marker == "field").text
        if value.startswith(start) and (not end or value.endswith(end.group(1))):
            break
    page.key("ENTER")
    if not any(run.marker == "button" and run.text == "Submit" for run in page.task_runs()):
        page.key("ESCAPE")
    page.submit()


@solver("miniwob.ascending-numbers")
def ascending_numbers(page: Page) -> None:
    # The numbers hide after the first click: where each is, read once.
    numbers = {int(run.text): run for run in page.task_runs() if run.text.isdigit() and not run.marker}
    for number in sorted(numbers):
        page.click(numbers[number])


@solver("miniwob.generate-number")
def generate_number(page: Page) -> None:
    match = re.search(r"number (greater|less) than (-?\d+)", page.instruction)
    parity = re.search(r"an (even|odd) number", page.instruction)

    def fits(number: int) -> bool:
        if parity:
            return number % 2 == (0 if parity.group(1) == "even" else 1)
        return number > int(match.group(2)) if match.group(1) == "greater" else number < int(match.group(2))

    for _ in range(15):
        shown = next((run for run in page.task_runs() if re.fullmatch(r"-?\d+", run.text)), None)
        if shown and fits(int(shown.text)):
            break
        page.submit("Generate")
    page.submit()


@solver("miniwob.enter-date")
def enter_date(page: Page) -> None:
    # A date field takes the digits in its own order (mm, dd, yyyy) and moves on by itself.
    date = re.search(r"Enter (\d\d)/(\d\d)/(\d{4})", page.instruction).groups()
    page.key("TAB")
    page.type("".join(date))
    page.submit()


@solver("miniwob.enter-time")
def enter_time(page: Page) -> None:
    hour, minute, half = re.search(r"Enter (\d+):(\d\d) (AM|PM)", page.instruction).groups()
    page.key("TAB")
    page.type(f"{int(hour):02d}{minute}{half[0]}")
    page.submit()


@solver("miniwob.terminal")
def terminal(page: Page) -> None:
    page.type("ls\n")
    listed = " ".join(run.text for run in page.task_runs()).split()
    files = [name for name in listed if "." in name.strip(".") or name.isalnum()]
    extension = re.search(r"with the extension (\.\w+)", page.instruction)
    after = listed[listed.index("ls") + 1 :] if "ls" in listed else files
    names = [name for name in after if name not in ("user$", "█")]
    if extension:
        target = next(name for name in names if name.endswith(extension.group(1)))
    else:
        target = next(name for name in names if "." not in name)
    page.type(f"rm {target}\n")


@solver("miniwob.click-dialog")
def click_dialog(page: Page) -> None:
    # The "x" is an icon: the darkest pixels of the dialog's title bar, above its text.
    image = picture(page).convert("L")
    text = min((run for run in page.task_runs()), key=lambda run: run.y)
    dark = [
        (x, y)
        for y in range(max(126, text.y - 80), text.y - 10)
        for x in range(0, 400)
        if image.getpixel((x, y)) < 150
    ]
    xs, ys = [p[0] for p in dark], [p[1] for p in dark]
    page.click(((min(xs) + max(xs)) // 2, (min(ys) + max(ys)) // 2))


# Drag tasks.


@solver("miniwob.drag-box")
def drag_box(page: Page) -> None:
    # Each box shows its letter at the same place inside it (its border and padding), so the
    # small box is inside the large one when its letter is a little right of and below the
    # large one's: the large box is 30 CSS pixels wider (75 in the picture), 37 is mid-way.
    small, large = page.find("s", below=125), page.find("L", below=125)
    grab = small.centre
    page.drag(grab, (grab[0] + large.x - small.x + 37, grab[1] + large.y - small.y + 37))
    page.submit()


# Chords.


@solver("miniwob.copy-paste")
def copy_paste(page: Page) -> None:
    # CTRL+A, CTRL+C in the text area; the empty text box is not in the text layer, but it is
    # the field next to the text area: after it (TAB) or, when TAB reached the button instead,
    # before it (back over the text area).
    text = page.find("", "field", exact=False, below=125)
    page.click(text)
    page.press("CTRL+A")
    page.press("CTRL+C")
    first_word = text.text.split(" ")[0]

    def pasted() -> bool:
        fields = [run for run in page.task_runs() if run.marker == "field"]
        return sum(run.text.startswith(first_word) for run in fields) >= 2

    page.press("TAB")
    page.press("CTRL+V")
    if not pasted():
        page.act(op="press", text="SHIFT+TAB", repeat=2)
        page.press("CTRL+V")
    page.submit()


# The hover, drag and chord solvers, in their own module; registered here, with the rest.
import miniwob_gestures  # noqa: E402,F401

"""A scripted agent that reads the page as text and nothing else.

It sees only the compact text the server gives (the MCP tool ``read_page``, or ``metadata.text``
with ``BROWSER_OBSERVE_TEXT``): one line per line of text, ``x,y,w,h [marker] text``, boxes in
screenshot pixels (docs/server.md, "Reading the page"). It finds what to click by its words, clicks the
centre of that box, and finishes with the answer it read. No coordinates are written down here:
each information task of ``assets/tasks/demo.jsonl`` has a plan of link words to follow and a
rule for where on the page its answer is (a table cell, the words after a label, the price under
a product's name).

Drivers adapt it to a client: the official MCP SDK, OpenEnv's ``MCPToolClient``, OpenEnv's
WebSocket client with observed text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Awaitable, Callable, Optional, Protocol

TRUNCATED = "[truncated]"
FRAME = "frame: other origin, not readable"
# How far one scroll looks further down the page, and how often the agent scrolls before it
# gives up looking for something.
SCROLL_DY = 300
MAX_SCROLLS = 8


@dataclass(frozen=True)
class Line:
    x: int
    y: int
    w: int
    h: int
    marker: Optional[str]
    text: str

    @property
    def centre(self) -> tuple[int, int]:
        return self.x + self.w // 2, self.y + self.h // 2


LINE_RE = re.compile(r"^(-?\d+),(-?\d+),(\d+),(\d+)(?: (.*))?$")


def parse(text: str) -> list[Line]:
    """The compact form's lines: a box, then the marker when the rest starts with ``[``."""
    lines = []
    for raw in text.splitlines():
        if raw == TRUNCATED:
            continue
        match = LINE_RE.match(raw)
        assert match, f"not a line of the compact form: {raw!r}"
        x, y, w, h, rest = match.groups()
        rest = rest or ""
        marker = None
        if rest.startswith("["):
            marker, _, rest = rest[1:].partition("]")
            rest = rest.lstrip(" ")
        lines.append(Line(int(x), int(y), int(w), int(h), marker, rest))
    return lines


def words(text: str) -> str:
    return " ".join(text.split())


def below_in_column(lines: list[Line], line: Line) -> Optional[Line]:
    """The next line of the same block: same left edge, right below, same kind."""
    return next(
        (
            other
            for other in lines
            if abs(other.x - line.x) <= 3
            and line.y < other.y <= line.y + 2 * line.h
            and other.marker == line.marker
        ),
        None,
    )


def find(lines: list[Line], phrase: str, marker: Optional[str] = None, exact: bool = False) -> Optional[Line]:
    """The first line where `phrase` begins (it may go on in the lines below, as a wrapped link
    or cell does); with `exact`, the line that says just that."""
    for line in lines:
        if marker is not None and line.marker != marker:
            continue
        if exact:
            if words(line.text) == phrase:
                return line
            continue
        joined, last = words(line.text), line
        for _ in range(3):
            if phrase in joined:
                break
            nxt = below_in_column(lines, last)
            if nxt is None:
                break
            joined, last = f"{joined} {words(nxt.text)}", nxt
        at = joined.find(phrase)
        if 0 <= at < len(words(line.text)):
            return line
    return None


def search(lines: list[Line], pattern: str) -> Optional[str]:
    """The first group of `pattern` in the page's text read in order."""
    match = re.search(pattern, " ".join(words(line.text) for line in lines))
    return match.group(1) if match else None


def right_of(lines: list[Line], label: str) -> Optional[str]:
    """The text right of a row's label (a table's first column)."""
    at = find(lines, label, exact=True)
    if at is None:
        return None
    row = sorted((l for l in lines if abs(l.y - at.y) <= 4 and l.x > at.x), key=lambda l: l.x)
    return row[0].text if row else None


def cell(lines: list[Line], row: str, column: str) -> Optional[str]:
    """A table cell: in the column headed `column`, on the row whose first cell begins `row`."""
    head = find(lines, column, exact=True)
    start = find(lines, row)
    if head is None or start is None:
        return None
    candidates = [l for l in lines if abs(l.x - head.x) <= 4 and l.y > head.y and abs(l.y - start.y) <= 4]
    return candidates[0].text if candidates else None


def under(lines: list[Line], phrase: str, pattern: str) -> Optional[str]:
    """The first line below `phrase`, in its column, that matches `pattern` (a card's price)."""
    at = find(lines, phrase)
    if at is None:
        return None
    column = sorted((l for l in lines if abs(l.x - at.x) <= 4 and l.y > at.y), key=lambda l: l.y)
    return next((l.text for l in column if re.fullmatch(pattern, l.text)), None)


def first(pattern: str, text: Optional[str]) -> Optional[str]:
    match = re.search(pattern, text or "")
    return match.group(1) if match else None


@dataclass
class Plan:
    """Links to follow, by their words, then where the answer is."""

    follow: list[tuple[str, bool]]
    answer: Callable[[list[Line]], Optional[str]]


# One plan per information task of assets/tasks/demo.jsonl (a test holds them equal).
PLANS: dict[str, Plan] = {
    "info-drill-price": Plan([], lambda ls: under(ls, "18V Cordless Drill Driver", r"\$\d+(?:\.\d\d)?")),
    "info-founded": Plan([("About", True)], lambda ls: first(r"\b(1[6-9]\d\d|20\d\d)\b", right_of(ls, "Founded"))),
    "info-workshop-time": Plan([], lambda ls: search(ls, r"Free workshop this Saturday:.*?\bat (\d{1,2}:\d\d)")),
    "info-paint-recoat": Plan(
        [("Painting a Room", False), ("Drying and recoat times", False)],
        lambda ls: cell(ls, "Water-based (latex) wall paint, eggshell", "Recoat"),
    ),
    "info-storm-days": Plan(
        [("From Ship Chandlery", False), ("The storm of 1993", False)],
        lambda ls: search(ls, r"closed for (\d+) days"),
    ),
    "info-sunday-hours": Plan(
        [("Open the store map", False), ("View opening hours", False)],
        lambda ls: cell(ls, "Sunday", "Store"),
    ),
    "info-staff-count": Plan([("About", True)], lambda ls: first(r"^(\d+)\b", right_of(ls, "Staff"))),
}


class Driver(Protocol):
    async def reset(self, task_id: str) -> dict: ...

    async def act(self, tool: str, **arguments) -> dict:
        """A tool's facts: at least ``url``, ``done``, ``reward``."""

    async def read(self) -> str:
        """The page's text in the compact form."""


@dataclass
class Run:
    task: str
    answer: Optional[str] = None
    facts: dict = field(default_factory=dict)
    # What the agent read and did, in order: ("read", text) and ("act", tool, arguments).
    transcript: list = field(default_factory=list)


async def solve(driver: Driver, task_id: str) -> Run:
    """Reset to the task, follow the plan's links by their words, finish with what was read."""
    plan = PLANS[task_id]
    run = Run(task_id)

    async def read() -> list[Line]:
        text = await driver.read()
        run.transcript.append(("read", text))
        return parse(text)

    async def act(tool: str, **arguments) -> dict:
        run.transcript.append(("act", tool, arguments))
        facts = await driver.act(tool, **arguments)
        assert not facts.get("error"), (tool, arguments, facts)
        return facts

    async def look(found: Callable[[list[Line]], Optional[object]]):
        """Read, scrolling down until `found` finds something."""
        for _ in range(MAX_SCROLLS):
            lines = await read()
            result = found(lines)
            if result is not None:
                return result
            await act("scroll", dy=SCROLL_DY)
        raise AssertionError(f"{task_id}: not found after {MAX_SCROLLS} scrolls:\n{run.transcript[-1]}")

    first_facts = await driver.reset(task_id)
    run.transcript.append(("act", "reset", {"task_id": task_id}))
    assert first_facts["done"] is False, first_facts
    for phrase, exact in plan.follow:
        link = await look(lambda ls: find(ls, phrase, marker="link", exact=exact))
        x, y = link.centre
        await act("click", x=x, y=y)
    run.answer = await look(plan.answer)
    run.facts = await act("finish", answer=run.answer)
    return run


def transcript_text(run: Run, max_lines: int = 12) -> str:
    """A short account of a run: each action, and the first lines of each read."""
    out = []
    for entry in run.transcript:
        if entry[0] == "act":
            out.append(f"> {entry[1]} {entry[2]}")
        else:
            lines = entry[1].splitlines()
            out += [f"  {line}" for line in lines[:max_lines]]
            if len(lines) > max_lines:
                out.append(f"  ... ({len(lines) - max_lines} more lines)")
    out.append(f"answer {run.answer!r}: reward {run.facts.get('reward')}")
    return "\n".join(out)


# A driver may be built from callables, when a client's calls fit no class.
class CallDriver:
    def __init__(
        self,
        reset: Callable[[str], Awaitable[dict]],
        act: Callable[..., Awaitable[dict]],
        read: Callable[[], Awaitable[str]],
    ):
        self._reset, self._act, self._read = reset, act, read

    async def reset(self, task_id: str) -> dict:
        return await self._reset(task_id)

    async def act(self, tool: str, **arguments) -> dict:
        return await self._act(tool, **arguments)

    async def read(self) -> str:
        return await self._read()

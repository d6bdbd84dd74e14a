"""What the three vendors' adapters share: one browser session driven call by call.

``Computer`` wraps a sync ``BrowserClient`` (``BrowserClient(base_url=...).sync()``): it runs one
step per gesture, keeps the last observation, knows where the pointer rests (the server's pointer
follows every gesture, so ``cursor_position`` and a click "where the cursor is" need no round
trip), takes fresh pictures without stepping (the server's ``capture`` tool), and turns anything
that did not happen into a ``CallFailed`` naming the call, which each adapter answers as its
vendor's error result.
"""

from __future__ import annotations

import time
from typing import Any, Callable, Optional

from pydantic import ValidationError

from ..client import Picture
from ..models import MAX_SCROLL, SCREEN_HEIGHT, SCREEN_WIDTH, BrowserAction
from .keys import UnknownKey


class CallFailed(Exception):
    """A model's call that was not done (refused before the wire, refused by the server, or done
    with an error the page gave): ``str()`` names the call and says why. ``picture`` is the page
    as it is after it, when there is one to show."""

    def __init__(self, message: str, picture: Optional[str] = None, url: Optional[str] = None):
        super().__init__(message)
        self.picture = picture
        self.url = url


def why(error: BaseException) -> str:
    """A failure in one line, in the server's words where it has them."""
    if isinstance(error, ValidationError):
        return "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'action'}: {e['msg']}" for e in error.errors(include_url=False)
        )
    text = str(error) or type(error).__name__
    # OpenEnv's client says "Server error: MESSAGE (code: CODE)".
    if text.startswith("Server error: "):
        text = text[len("Server error: "):]
    return text


class Computer:
    """A browser session for a computer-use model: steps, pictures and the pointer.

    Args:
        client: a ``BrowserClient`` in sync mode (``.sync()``), connected.
        sleep: how waiting is done (``time.sleep``; a test passes its own).
    """

    def __init__(self, client: Any, *, sleep: Callable[[float], None] = time.sleep) -> None:
        self.client = client
        self.sleep = sleep
        self.last: Any = None  # the last StepResult
        self.cursor: Optional[tuple[int, int]] = None
        self.done = False

    # The episode.

    def reset(self, **kwargs: Any) -> Any:
        """Start an episode (``start_url=...`` or ``task_id=...``); its first observation."""
        self.last = self.client.reset(**kwargs)
        self.cursor = None
        self.done = bool(self.last.done)
        return self.last

    @property
    def url(self) -> str:
        return self.last.observation.url if self.last is not None else ""

    @property
    def screenshot(self) -> str:
        """The last observation's screenshot (base64 PNG)."""
        return self.last.observation.screenshot if self.last is not None else ""

    # Acting.

    def act(self, call: str, **fields: Any) -> Any:
        """One step: ``fields`` of a ``BrowserAction``. Raises ``CallFailed`` naming ``call`` when
        the action is refused or the page reports an error; the pointer follows the gesture."""
        if self.last is None:
            raise CallFailed(f"{call}: no episode yet: reset first")
        if self.done:
            raise CallFailed(f"{call}: the episode is over (done): reset to go on", self.screenshot, self.url)
        try:
            action = BrowserAction(**fields)
        except ValidationError as refused:
            raise CallFailed(f"{call}: {why(refused)}") from None
        try:
            result = self.client.step(action)
        except (RuntimeError, ConnectionError, OSError) as refused:
            raise CallFailed(f"{call}: {why(refused)}", self.screenshot, self.url) from None
        self.last = result
        self.done = bool(result.done)
        self._follow_pointer(action)
        error = result.observation.error
        if error:
            detail = result.observation.metadata.get("error_detail")
            raise CallFailed(
                f"{call}: {error}" + (f": {detail}" if detail else ""), self.screenshot, self.url
            )
        return result

    def _follow_pointer(self, action: BrowserAction) -> None:
        if action.op == "drag" and action.path:
            self.cursor = tuple(action.path[-1])
        elif action.x is not None and action.y is not None:
            self.cursor = (action.x, action.y)

    def scroll(self, call: str, dx: int, dy: int, at: Optional[tuple[int, int]] = None) -> Any:
        """A wheel turn of ``dx``, ``dy`` pixels at ``at`` (else where the pointer rests), in as
        many steps as the server's bound per step asks (``MAX_SCROLL`` each way)."""
        result = None
        while dx or dy or result is None:
            sx = max(-MAX_SCROLL, min(MAX_SCROLL, dx))
            sy = max(-MAX_SCROLL, min(MAX_SCROLL, dy))
            fields: dict[str, Any] = {"op": "scroll", "dy": sy, "dx": sx}
            if at is not None:
                fields.update(x=at[0], y=at[1])
            result = self.act(call, **fields)
            dx, dy = dx - sx, dy - sy
        return result

    def press(self, call: str, chord: Callable[[], str], repeat: int = 1) -> Any:
        """A key or chord (``chord()`` gives the server's name; an unknown key is the call's
        failure), ``repeat`` times."""
        try:
            text = chord()
        except UnknownKey as unknown:
            raise CallFailed(f"{call}: {unknown}") from None
        return self.act(call, op="press", text=text, repeat=repeat if repeat > 1 else None)

    # Looking without acting.

    def picture(self, call: str, region: Optional[list[int]] = None, scale: Optional[float] = None) -> Picture:
        """A fresh picture of the page (or a region of it at a higher scale) without a step."""
        if self.last is None:
            raise CallFailed(f"{call}: no episode yet: reset first")
        try:
            return self.client.capture(region=region, scale=scale)
        except (RuntimeError, ConnectionError, OSError) as refused:
            raise CallFailed(f"{call}: {why(refused)}", self.screenshot, self.url) from None

    def wait(self, call: str, seconds: float) -> Picture:
        """Let ``seconds`` pass (the page goes on meanwhile), then a fresh picture."""
        self.sleep(max(0.0, float(seconds)))
        return self.picture(call)


#: How many points a two-point drag is given: a person's pointer passes over the page between the
#: press and the release, and pages (HTML5 drag-and-drop, sliders) hear those moves.
DRAG_POINTS = 5


def drag_path(start: tuple[int, int], end: tuple[int, int], points: int = DRAG_POINTS) -> list[tuple[int, int]]:
    """A straight drag from ``start`` to ``end`` through evenly spaced points."""
    (x0, y0), (x1, y1) = start, end
    return [(round(x0 + (x1 - x0) * i / (points - 1)), round(y0 + (y1 - y0) * i / (points - 1))) for i in range(points)]


def fitted_path(path: list[tuple[int, int]], most: int) -> list[tuple[int, int]]:
    """A path of at most ``most`` points: evenly chosen, the first and the last kept."""
    if len(path) <= most:
        return path
    return [path[round(i * (len(path) - 1) / (most - 1))] for i in range(most)]


def point(call: str, value: Any, what: str = "coordinate") -> tuple[int, int]:
    """``[x, y]`` (or ``{"x", "y"}``) as whole screenshot pixels in the viewport, or the call's
    failure naming the field."""
    try:
        if isinstance(value, dict):
            x, y = value["x"], value["y"]
        else:
            x, y = value
        x, y = round(float(x)), round(float(y))
    except (TypeError, ValueError, KeyError):
        raise CallFailed(f"{call}: {what} should be [x, y], not {value!r}") from None
    if not (0 <= x < SCREEN_WIDTH and 0 <= y < SCREEN_HEIGHT):
        raise CallFailed(
            f"{call}: {what} ({x}, {y}) is outside the {SCREEN_WIDTH}x{SCREEN_HEIGHT} screen "
            f"(x 0..{SCREEN_WIDTH - 1}, y 0..{SCREEN_HEIGHT - 1})"
        )
    return x, y


__all__ = ["CallFailed", "Computer", "DRAG_POINTS", "drag_path", "fitted_path", "point", "why"]

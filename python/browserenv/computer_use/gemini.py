"""Gemini's computer use (``types.Tool(computer_use=...)``, the browser environment) on a
browserenv session.

    from browserenv.computer_use import Computer, gemini

    adapter = gemini.GeminiComputer(computer)
    config = types.GenerateContentConfig(tools=[adapter.tool()])
    response = client.models.generate_content(model=..., contents=history, config=config)
    calls = [part.function_call for part in response.candidates[0].content.parts if part.function_call]
    history.append(types.Content(role="user", parts=adapter.run(calls)))

Gemini's coordinates are on a 1000x1000 grid (0-999 each way) whatever the screen; they are mapped
to the 800x600 screenshot (``x * 800 // 1000``, ``y * 600 // 1000``), as Google's reference
implementation does. What each function becomes (docs/training.md has the table): ``click_at``: a
``click``; ``hover_at``: a ``move``; ``type_text_at``: a click there, CTRL+A and DELETE when
``clear_before_typing`` (default true), a ``type``, ENTER when ``press_enter`` (default true, as
the API documents them); ``scroll_document``: PAGE_UP / PAGE_DOWN, or half a screen sideways;
``scroll_at``: a wheel at the point of ``magnitude`` grid units (default 800) in ``direction``;
``key_combination``: one ``press`` of ``keys`` (``Control+A``); ``drag_and_drop``: a ``drag``;
``navigate``: ``goto``; ``go_back``, ``go_forward``: ``back``, ``forward``; ``wait_5_seconds``: a
pause, then a fresh picture; ``open_web_browser``: the page as it is; ``search``: ``goto`` the
search page given as ``search_url``, refused when none is configured (and left out of the tool).

Every answer is a ``function_response`` part: ``response`` holds the page's ``url`` (and
``error`` for a call that was not done), ``parts`` the screenshot as ``inline_data`` PNG bytes.
A call whose ``safety_decision`` needs confirmation runs only when ``confirm`` approves it (then
the response says ``safety_acknowledgement``), and is answered as refused otherwise.
"""

from __future__ import annotations

import base64
from typing import Any, Callable, Iterable, Optional

from ..models import SCREEN_HEIGHT, SCREEN_WIDTH
from . import keys
from .session import CallFailed, Computer, drag_path

#: Gemini's grid: 1000 units each way.
GRID = 1000
#: The functions of the browser environment this adapter answers.
FUNCTIONS = ("open_web_browser", "click_at", "hover_at", "type_text_at", "scroll_document", "scroll_at",
             "wait_5_seconds", "go_back", "go_forward", "search", "navigate", "key_combination",
             "drag_and_drop")
#: ``scroll_at``'s magnitude when the call gives none, in grid units.
DEFAULT_MAGNITUDE = 800
WAIT_SECONDS = 5.0


def _data(item: Any) -> dict:
    return item.model_dump() if hasattr(item, "model_dump") else dict(item)


def to_pixels(x: Any, y: Any) -> tuple[int, int]:
    """A point of the 0-999 grid as screenshot pixels."""
    gx, gy = round(float(x)), round(float(y))
    if not (0 <= gx < GRID and 0 <= gy < GRID):
        raise ValueError(f"({gx}, {gy}) is outside the 0-999 grid")
    return gx * SCREEN_WIDTH // GRID, gy * SCREEN_HEIGHT // GRID


class GeminiComputer:
    """Answers Gemini's computer-use function calls on a ``Computer``.

    Args:
        computer: the session.
        search_url: where ``search`` goes (a search engine's start page); ``None`` refuses it and
            leaves it out of the tool.
        confirm: called with a call's ``safety_decision`` (a dict) when it asks for confirmation;
            ``True`` runs the call. Without it such calls are refused.
    """

    def __init__(self, computer: Computer, *, search_url: Optional[str] = None,
                 confirm: Optional[Callable[[dict], bool]] = None) -> None:
        self.computer = computer
        self.search_url = search_url
        self.confirm = confirm

    def tool(self) -> dict:
        """The tool for ``GenerateContentConfig(tools=[...])`` (a ``types.Tool`` as a dict)."""
        excluded = [] if self.search_url else ["search"]
        return {"computer_use": {"environment": "ENVIRONMENT_BROWSER", "excluded_predefined_functions": excluded}}

    def run(self, calls: Iterable[Any]) -> list[dict]:
        """A ``function_response`` part per call, in order (``types.Part`` as dicts)."""
        return [{"function_response": self.response(call)} for call in calls]

    def response(self, call: Any) -> dict:
        data = _data(call)
        name = data.get("name") or ""
        args = dict(data.get("args") or {})
        extra: dict = {}
        try:
            decision = args.pop("safety_decision", None)
            args.pop("intent", None)  # the model's reason for the step, for logs
            if decision and _data(decision).get("decision") == "require_confirmation":
                if not (self.confirm and self.confirm(_data(decision)) is True):
                    raise CallFailed(f"{name}: the safety decision asks for a person's confirmation, which was not given")
                extra["safety_acknowledgement"] = "true"
            picture, url = self._call(name, args)
            response = {"url": url, **extra}
        except CallFailed as failed:
            picture, url = failed.picture or self.computer.screenshot, failed.url or self.computer.url
            response = {"url": url, "error": str(failed), **extra}
        answer: dict = {"name": name, "response": response}
        if data.get("id"):
            answer["id"] = data["id"]
        if picture:
            answer["parts"] = [{"inline_data": {"mime_type": "image/png", "data": base64.b64decode(picture)}}]
        return answer

    def _call(self, name: str, a: dict) -> tuple[str, str]:
        computer = self.computer

        def stepped(result: Any) -> tuple[str, str]:
            return result.observation.screenshot, result.observation.url

        def at(xk: str = "x", yk: str = "y") -> tuple[int, int]:
            try:
                return to_pixels(a[xk], a[yk])
            except KeyError as missing:
                raise CallFailed(f"{name}: {missing.args[0]} is required") from None
            except (TypeError, ValueError) as bad:
                raise CallFailed(f"{name}: {xk}, {yk}: {bad}") from None

        if name == "click_at":
            x, y = at()
            return stepped(computer.act(name, op="click", x=x, y=y))
        if name == "hover_at":
            x, y = at()
            return stepped(computer.act(name, op="move", x=x, y=y))
        if name == "type_text_at":
            x, y = at()
            result = computer.act(name, op="click", x=x, y=y)
            if a.get("clear_before_typing", True):
                computer.act(name, op="press", text="CTRL+A")
                result = computer.act(name, op="press", text="DELETE")
            if a.get("text"):
                result = computer.act(name, op="type", text=str(a["text"]))
            if a.get("press_enter", True):
                result = computer.act(name, op="press", text="ENTER")
            return stepped(result)
        if name == "scroll_document":
            direction = a.get("direction")
            if direction in ("up", "down"):
                return stepped(computer.act(name, op="press", text="PAGE_UP" if direction == "up" else "PAGE_DOWN"))
            if direction in ("left", "right"):
                half = SCREEN_WIDTH // 2
                return stepped(computer.scroll(name, -half if direction == "left" else half, 0))
            raise CallFailed(f"{name}: direction should be up, down, left or right, not {direction!r}")
        if name == "scroll_at":
            x, y = at()
            direction = a.get("direction")
            magnitude = float(a.get("magnitude", DEFAULT_MAGNITUDE))
            if direction in ("up", "down"):
                pixels = round(magnitude * SCREEN_HEIGHT / GRID)
                dx, dy = 0, -pixels if direction == "up" else pixels
            elif direction in ("left", "right"):
                pixels = round(magnitude * SCREEN_WIDTH / GRID)
                dx, dy = -pixels if direction == "left" else pixels, 0
            else:
                raise CallFailed(f"{name}: direction should be up, down, left or right, not {direction!r}")
            return stepped(computer.scroll(name, dx, dy, (x, y)))
        if name == "key_combination":
            text = str(a.get("keys") or "")
            return stepped(computer.press(name, lambda: keys.chord_text(text)))
        if name == "drag_and_drop":
            start, end = at(), at("destination_x", "destination_y")
            return stepped(computer.act(name, op="drag", path=drag_path(start, end)))
        if name == "navigate":
            return stepped(computer.act(name, op="goto", url=str(a.get("url") or "")))
        if name == "go_back":
            return stepped(computer.act(name, op="back"))
        if name == "go_forward":
            return stepped(computer.act(name, op="forward"))
        if name == "search":
            if not self.search_url:
                raise CallFailed(f"{name}: no search page is configured on this environment: navigate to a URL instead")
            return stepped(computer.act(name, op="goto", url=self.search_url))
        if name == "wait_5_seconds":
            picture = computer.wait(name, WAIT_SECONDS)
            return picture.png, picture.url
        if name == "open_web_browser":
            picture = computer.picture(name)
            return picture.png, picture.url
        raise CallFailed(f"{name}: not a computer-use function this environment answers ({', '.join(FUNCTIONS)})")


__all__ = ["DEFAULT_MAGNITUDE", "FUNCTIONS", "GRID", "GeminiComputer", "WAIT_SECONDS", "to_pixels"]

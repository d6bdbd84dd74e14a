"""Anthropic's computer toolset on a browserenv session: ``computer_toolset_20260801`` (one
``tool_use`` block per member call, ``toolset_name: "computer"``) and the older single tools
``computer_20251124`` and ``computer_20250124`` (``name: "computer"``, the member in
``input.action``), with the same member names.

    from browserenv.computer_use import Computer, anthropic as claude

    adapter = claude.AnthropicComputer(computer)
    message = client.messages.create(model=..., tools=[claude.tool()], messages=history)
    results = adapter.run(message.content)      # tool_result blocks, for the next user turn

What each member becomes (docs/training.md has the table): ``left_click``, ``right_click``,
``middle_click``, ``double_click``, ``triple_click``: a ``click`` with that button and count, at
``coordinate`` or where the pointer rests, ``text`` (``shift``, ``ctrl+shift``) held;
``left_click_drag``: a ``drag`` from ``start_coordinate`` to ``coordinate``; ``mouse_move``: a
``move``; ``left_mouse_down``/``left_mouse_up``: ``mouse_down``/``mouse_up`` where the pointer
rests; ``scroll``: a wheel of ``scroll_amount`` x ``PIXELS_PER_SCROLL_UNIT`` pixels in
``scroll_direction``; ``key``: a ``press`` per chord of ``text`` in xdotool's names (``ctrl+s``,
``Return``, ``Page_Up``; chords separated by spaces are pressed one after the other), ``repeat``
times; ``hold_key``: the chord pressed as a held key repeats (``held_presses``); ``type``: a
``type``; ``wait``: a pause of ``duration`` seconds (at most ``MAX_WAIT_SECONDS``), then a fresh
picture; ``screenshot``: a fresh picture; ``zoom``: ``region`` drawn again by the server at the
scale that fills 800x600 (sharper, not an enlarged crop); ``cursor_position``: where the pointer
rests, ``X=x,Y=y``.

Every result is a ``tool_result`` block: a line saying what was done, the page's URL, and the
screenshot after it as an image block; a call that was not done is ``is_error: true`` with a text
naming the call and why.
"""

from __future__ import annotations

import math
from typing import Any, Iterable, Optional

from ..models import MAX_REPEAT, MAX_TEXT_CHARS, SCREEN_HEIGHT, SCREEN_WIDTH
from . import keys
from .session import CallFailed, Computer, drag_path, point

#: The computer toolset and the older tool versions this adapter answers.
VERSIONS = ("computer_toolset_20260801", "computer_20251124", "computer_20250124")
#: Pixels a unit of ``scroll_amount`` (one click of a mouse wheel) scrolls: what Chromium scrolls
#: for one wheel click on Windows (three lines of 33 1/3 pixels), a tenth of a screen up to 1,200.
PIXELS_PER_SCROLL_UNIT = 100
#: The longest ``wait`` (seconds): a model's longer wait is cut to this.
MAX_WAIT_SECONDS = 30.0
#: A held key repeats after this long, this many times a second (X11's defaults are 660 ms, 25 Hz).
HOLD_REPEAT_DELAY, HOLD_REPEAT_RATE = 0.5, 25


def tool(version: str = VERSIONS[0]) -> dict:
    """The ``tools[]`` entry: the toolset (every member enabled, zoom included), or an older
    single tool with the 800x600 display (zoom enabled where the version has it)."""
    if version == "computer_toolset_20260801":
        return {"type": version}
    if version not in VERSIONS:
        raise ValueError(f"unknown computer tool version {version!r}: one of {', '.join(VERSIONS)}")
    declared = {"type": version, "name": "computer", "display_width_px": SCREEN_WIDTH,
                "display_height_px": SCREEN_HEIGHT}
    if version == "computer_20251124":
        declared["enable_zoom"] = True
    return declared


def held_presses(seconds: float) -> int:
    """How many keydowns a key held for ``seconds`` makes (the first, then its auto-repeats), at
    most the server's ``repeat`` bound."""
    repeats = math.floor(max(0.0, seconds - HOLD_REPEAT_DELAY) * HOLD_REPEAT_RATE)
    return max(1, min(MAX_REPEAT, 1 + repeats))


def _data(item: Any) -> dict:
    return item.model_dump() if hasattr(item, "model_dump") else dict(item)


class AnthropicComputer:
    """Answers the computer member calls of one assistant turn."""

    def __init__(self, computer: Computer) -> None:
        self.computer = computer

    def run(self, content: Iterable[Any]) -> list[dict]:
        """``tool_result`` blocks for the computer calls among ``content`` (an assistant message's
        content blocks, SDK objects or dicts), in order; other tools' blocks are left to their own
        code."""
        results = []
        for block in map(_data, content):
            if block.get("type") != "tool_use":
                continue
            toolset = block.get("toolset_name") == "computer"
            if not (toolset or block.get("name") == "computer"):
                continue
            arguments = dict(block.get("input") or {})
            member = block["name"] if toolset else str(arguments.pop("action", ""))
            result = self.result(block["id"], member, arguments)
            if toolset:
                result["toolset_name"] = "computer"
            results.append(result)
        return results

    def result(self, tool_use_id: str, member: str, arguments: dict) -> dict:
        """The ``tool_result`` for one member call."""
        try:
            said, picture, url = self._member(member, arguments)
        except CallFailed as failed:
            return {"type": "tool_result", "tool_use_id": tool_use_id, "is_error": True,
                    "content": [{"type": "text", "text": str(failed)}]}
        content: list[dict] = [{"type": "text", "text": f"{said}\nURL: {url}"}]
        if picture:
            content.append({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": picture}})
        return {"type": "tool_result", "tool_use_id": tool_use_id, "content": content}

    def _member(self, member: str, a: dict) -> tuple[str, Optional[str], str]:
        computer = self.computer
        call = member or "(no action)"

        def stepped(result: Any, said: str) -> tuple[str, Optional[str], str]:
            return said, result.observation.screenshot, result.observation.url

        def pictured(picture: Any, said: str) -> tuple[str, Optional[str], str]:
            return said, picture.png, picture.url

        if member in _CLICKS:
            button, count = _CLICKS[member]
            x, y = self._at(call, a.get("coordinate"))
            held = _held(call, a.get("text"))
            return stepped(computer.act(call, op="click", x=x, y=y, button=button, count=count if count > 1 else None,
                                        modifiers=held or None), f"Clicked ({member}) at ({x}, {y}).")
        if member == "left_click_drag":
            start = point(call, a.get("start_coordinate"), "start_coordinate")
            end = point(call, a.get("coordinate"))
            held = _held(call, a.get("text"))
            return stepped(computer.act(call, op="drag", path=drag_path(start, end), modifiers=held or None),
                           f"Dragged from {start} to {end}.")
        if member == "mouse_move":
            x, y = point(call, a.get("coordinate"))
            return stepped(computer.act(call, op="move", x=x, y=y), f"Moved the pointer to ({x}, {y}).")
        if member in ("left_mouse_down", "left_mouse_up"):
            x, y = self._at(call, a.get("coordinate"))
            op = "mouse_down" if member == "left_mouse_down" else "mouse_up"
            done = "Pressed" if op == "mouse_down" else "Released"
            return stepped(computer.act(call, op=op, x=x, y=y), f"{done} the left button at ({x}, {y}).")
        if member == "scroll":
            return stepped(*self._scroll(call, a))
        if member == "key":
            chords = _chords(call, a.get("text"))
            repeat = int(a.get("repeat") or 1)
            result = None
            for _ in range(repeat if len(chords) > 1 else 1):
                for chord in chords:
                    times = 1 if len(chords) > 1 else repeat
                    while times > 0:
                        result = computer.press(call, lambda c=chord: c, min(times, MAX_REPEAT))
                        times -= MAX_REPEAT
            return stepped(result, f"Pressed {a.get('text')}" + (f" {repeat} times." if repeat > 1 else "."))
        if member == "hold_key":
            chords = _chords(call, a.get("text"))
            presses = held_presses(float(a.get("duration") or 0))
            result = None
            for chord in chords:
                result = computer.press(call, lambda c=chord: c, presses)
            return stepped(result, f"Held {a.get('text')} for {a.get('duration')} s.")
        if member == "type":
            text = str(a.get("text") or "")
            if not text:
                raise CallFailed(f"{call}: text is empty: nothing to type")
            result = None
            for at in range(0, len(text), MAX_TEXT_CHARS):
                result = computer.act(call, op="type", text=text[at : at + MAX_TEXT_CHARS])
            return stepped(result, "Typed.")
        if member == "wait":
            seconds = min(MAX_WAIT_SECONDS, max(0.0, float(a.get("duration") or 0)))
            return pictured(computer.wait(call, seconds), f"Waited {seconds:g} s.")
        if member == "screenshot":
            return pictured(computer.picture(call), "Took a screenshot.")
        if member == "zoom":
            region = a.get("region")
            if not (isinstance(region, (list, tuple)) and len(region) == 4):
                raise CallFailed(f"{call}: region should be [x0, y0, x1, y1], not {region!r}")
            picture = computer.picture(call, region=[round(float(v)) for v in region])
            return pictured(picture, f"Zoomed into {list(picture.region)} at {picture.scale:g}x "
                                      f"({picture.width}x{picture.height}).")
        if member == "cursor_position":
            x, y = computer.cursor or (SCREEN_WIDTH // 2, SCREEN_HEIGHT // 2)
            return f"X={x},Y={y}", None, computer.url
        raise CallFailed(f"{call}: not a member of the computer tool this server answers")

    def _at(self, call: str, coordinate: Any) -> tuple[int, int]:
        if coordinate is not None:
            return point(call, coordinate)
        if self.computer.cursor is None:
            raise CallFailed(f"{call}: no coordinate and no pointer position yet: give a coordinate")
        return self.computer.cursor

    def _scroll(self, call: str, a: dict) -> tuple[Any, str]:
        direction = a.get("scroll_direction")
        amount = int(a.get("scroll_amount") or 0)
        steps = {"up": (0, -1), "down": (0, 1), "left": (-1, 0), "right": (1, 0)}
        if direction not in steps:
            raise CallFailed(f"{call}: scroll_direction should be up, down, left or right, not {direction!r}")
        dx, dy = (sign * amount * PIXELS_PER_SCROLL_UNIT for sign in steps[direction])
        held = _held(call, a.get("text"))
        if held == ["SHIFT"] and not dx:
            dx, dy = dy, 0  # SHIFT + wheel scrolls sideways in Chromium
        elif held:
            raise CallFailed(f"{call}: scrolling with {'+'.join(held)} held is not supported")
        at = point(call, a["coordinate"]) if a.get("coordinate") is not None else self.computer.cursor
        result = self.computer.scroll(call, dx, dy, at)
        return result, f"Scrolled {direction} by {amount} ({abs(dx or dy)} pixels)."


_CLICKS = {"left_click": ("left", 1), "right_click": ("right", 1), "middle_click": ("middle", 1),
           "double_click": ("left", 2), "triple_click": ("left", 3)}


def _held(call: str, text: Any) -> list[str]:
    if not text:
        return []
    try:
        return keys.modifiers(keys.split_chord(str(text)))
    except keys.UnknownKey as unknown:
        raise CallFailed(f"{call}: text: {unknown}") from None


def _chords(call: str, text: Any) -> list[str]:
    """The chords of xdotool's ``key`` text (``ctrl+a Delete``): the server's names."""
    words = str(text or "").split()
    if not words:
        raise CallFailed(f"{call}: text is empty: name a key such as Return or ctrl+s")
    try:
        return [keys.chord_text(word) for word in words]
    except keys.UnknownKey as unknown:
        raise CallFailed(f"{call}: {unknown}") from None


__all__ = ["AnthropicComputer", "MAX_WAIT_SECONDS", "PIXELS_PER_SCROLL_UNIT", "VERSIONS", "held_presses", "tool"]

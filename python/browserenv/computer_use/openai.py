"""OpenAI's ``computer`` tool (the Responses API) on a browserenv session.

    from browserenv import BrowserClient
    from browserenv.computer_use import Computer, openai as cua

    with BrowserClient(base_url=URL).sync() as client:
        computer = Computer(client); computer.reset(start_url="https://example.com")
        adapter = cua.OpenAIComputer(computer)
        response = client_openai.responses.create(model=..., tools=[cua.tool()], input=[...])
        for call in (item for item in response.output if item.type == "computer_call"):
            items = adapter.run(call)         # the computer_call_output (and a message on failure)

``run`` takes one ``computer_call`` (the SDK's ``ResponseComputerToolCall`` or its dict), with one
``action`` or the batched ``actions``, runs each in order, and answers with a
``computer_call_output`` holding the screenshot after the last one (a ``data:image/png;base64``
URL). What each action becomes (docs/training.md has the table):

- ``click``: a ``click`` with its button (``wheel`` is the middle button); the ``back`` and
  ``forward`` buttons go through the history, as a browser does for them;
- ``double_click``: a click of count 2; ``drag``: a ``drag`` through the path (at most 64 points,
  evenly chosen); ``move``: a ``move``; ``keys`` held: the click's or drag's ``modifiers``;
- ``scroll``: a wheel of ``scroll_x``, ``scroll_y`` pixels at ``x``, ``y`` (more than 1200 pixels in
  several steps; SHIFT held turns a vertical wheel horizontal, as Chromium does);
- ``keypress``: one ``press`` of the chord the keys make; ``type``: a ``type``;
- ``wait``: a pause (``WAIT_SECONDS``), then a fresh picture; ``screenshot``: a fresh picture.

The computer tool has no error output: a call that fails (an action refused, the page's error)
stops its batch and is answered with the ``computer_call_output`` of the page as it is then,
``status: "incomplete"``, followed by a user ``message`` naming the call, the action and why
(``error_message``). Every call is answered.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

from ..models import MAX_PATH_POINTS
from . import keys
from .session import CallFailed, Computer, fitted_path, point

#: How long ``wait`` pauses when the action does not say.
WAIT_SECONDS = 2.0


def tool() -> dict:
    """The tool declaration for ``responses.create(tools=[...])``: the computer tool carries no
    display size; the model reads the screenshots' (800x600)."""
    return {"type": "computer"}


def _data(item: Any) -> dict:
    return item.model_dump() if hasattr(item, "model_dump") else dict(item)


class OpenAIComputer:
    """Runs ``computer_call`` items on a ``Computer``.

    Args:
        computer: the session.
        approve_safety_checks: called with a call's ``pending_safety_checks`` (a list of dicts);
            ``True`` acknowledges them and the call runs. Without it, a call with pending checks
            is not run and is answered as failed.
    """

    def __init__(
        self, computer: Computer, *, approve_safety_checks: Optional[Callable[[list], bool]] = None
    ) -> None:
        self.computer = computer
        self.approve_safety_checks = approve_safety_checks

    def run(self, call: Any) -> list[dict]:
        """The input items answering one ``computer_call``."""
        data = _data(call)
        call_id = data.get("call_id") or data.get("id") or ""
        actions = data.get("actions") or ([data["action"]] if data.get("action") else [])
        actions = [_data(action) for action in actions]
        checks = [_data(check) for check in data.get("pending_safety_checks") or []]
        picture: Optional[str] = None
        failure: Optional[str] = None
        if checks and not (self.approve_safety_checks and self.approve_safety_checks(checks) is True):
            failure = f"computer_call {call_id}: pending safety checks were not acknowledged: " + ", ".join(
                str(check.get("code") or check.get("id")) for check in checks
            )
        elif not actions:
            failure = f"computer_call {call_id}: it holds no action"
        for at, action in enumerate(actions if failure is None else []):
            kind = action.get("type", "?")
            try:
                picture = self._act(f"{kind} (action {at + 1} of {len(actions)})", kind, action) or picture
            except CallFailed as failed:
                left = len(actions) - at - 1
                failure = f"computer_call {call_id}: {failed}" + (
                    f"; the {left} action(s) after it were not run" if left else ""
                )
                picture = failed.picture or picture
                break
        if picture is None:
            picture = self._fresh_picture()
        output: dict = {
            "type": "computer_call_output",
            "call_id": call_id,
            "output": {"type": "computer_screenshot", "image_url": f"data:image/png;base64,{picture}"},
        }
        if checks and failure is None:
            output["acknowledged_safety_checks"] = [
                {"id": c["id"], "code": c.get("code"), "message": c.get("message")} for c in checks
            ]
        if failure is None:
            return [output]
        output["status"] = "incomplete"
        return [output, error_message(failure)]

    def _fresh_picture(self) -> str:
        try:
            return self.computer.picture("screenshot").png
        except CallFailed:
            return self.computer.screenshot

    def _act(self, call: str, kind: str, action: dict) -> Optional[str]:
        """Do one action; the screenshot after it when it took one."""
        computer = self.computer
        held = [] if kind == "keypress" else _held(call, action.get("keys"))
        if kind in ("click", "double_click"):
            button = action.get("button") or "left"
            if button in ("back", "forward"):
                if held:
                    raise CallFailed(f"{call}: the {button} button with keys held is not supported")
                return computer.act(call, op=button).observation.screenshot
            x, y = point(call, action)
            return computer.act(
                call, op="click", x=x, y=y, button=_BUTTONS.get(button, button),
                count=2 if kind == "double_click" else None, modifiers=held or None,
            ).observation.screenshot
        if kind == "drag":
            path = [point(call, p, "path point") for p in action.get("path") or []]
            if len(path) < 2:
                raise CallFailed(f"{call}: a drag needs at least 2 points, not {len(path)}")
            path = fitted_path(path, MAX_PATH_POINTS)
            return computer.act(call, op="drag", path=path, modifiers=held or None).observation.screenshot
        if kind == "move":
            if held:
                raise CallFailed(f"{call}: moving with keys held ({', '.join(held)}) is not supported")
            x, y = point(call, action)
            return computer.act(call, op="move", x=x, y=y).observation.screenshot
        if kind == "scroll":
            at = point(call, action)
            dx, dy = int(action.get("scroll_x") or 0), int(action.get("scroll_y") or 0)
            if held == ["SHIFT"] and not dx:
                dx, dy = dy, 0  # SHIFT + wheel scrolls sideways in Chromium
            elif held:
                raise CallFailed(f"{call}: scrolling with {'+'.join(held)} held is not supported")
            return computer.scroll(call, dx, dy, at).observation.screenshot
        if kind == "keypress":
            names = list(action.get("keys") or [])
            return computer.press(call, lambda: keys.chord(names)).observation.screenshot
        if kind == "type":
            text = action.get("text") or ""
            if not text:
                return None
            return computer.act(call, op="type", text=text).observation.screenshot
        if kind == "wait":
            seconds = action.get("duration")
            return computer.wait(call, WAIT_SECONDS if seconds is None else float(seconds)).png
        if kind == "screenshot":
            return computer.picture(call).png
        raise CallFailed(f"{call}: unknown action type {kind!r}")


_BUTTONS = {"wheel": "middle"}


def _held(call: str, names: Any) -> list[str]:
    try:
        return keys.modifiers(list(names or []))
    except keys.UnknownKey as unknown:
        raise CallFailed(f"{call}: keys: {unknown}") from None


def error_message(text: str) -> dict:
    """A user message item telling the model what failed (the computer tool has no error output)."""
    return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}


__all__ = ["OpenAIComputer", "WAIT_SECONDS", "error_message", "tool"]

"""BrowserGym's coordinate actions on a browserenv session, so that an agent prompted with
BrowserGym's ``coord`` action set (with ``chat``, ``infeas`` and ``nav``) runs unchanged.

    from browserenv import BrowserClient
    from browserenv.browsergym import CoordActions

    with BrowserClient(base_url=URL).sync() as client:
        env = CoordActions(client)
        env.reset(start_url="https://example.com")
        outcome = env.step("mouse_click(120, 45)\\nkeyboard_type('hello')")
        print(outcome.last_action_error, outcome.result.observation.url)

An action is text with one or more calls, as BrowserGym reads it: calls are found anywhere in the
text (prose between them is skipped, ``#`` comments are ignored), their arguments are Python
literals (strings, numbers, lists, tuples, dicts, True, False, None), positional then named. The
text is parsed, never evaluated (``parse``). The calls run in order; the first that fails stops
the rest and is reported in ``last_action_error`` as BrowserGym reports an exception
(``f"{type(e).__name__}: {e}"``: ``NameError: Invalid action type 'click_at'.``,
``TypeError: mouse_click() missing 1 required positional argument: 'y'``,
``Error: Keyboard.press: Unknown key: "Hyper"``).

What each call becomes (docs/training.md has the table): ``mouse_click``, ``mouse_dblclick``:
a ``click`` (count 2), with the button; ``mouse_move``: a ``move``; ``mouse_down`` /
``mouse_up``: the same ops; ``mouse_drag_and_drop``: a ``drag`` through evenly spaced points;
``scroll_at``: a wheel there; ``scroll`` (BrowserGym's ``bid`` and MiniWoB sets): a wheel where
the pointer rests; ``keyboard_press``: a ``press`` of the chord in Playwright's key names
(``Control+a``, ``Shift+ArrowLeft``, ``ControlOrMeta+a``); ``keyboard_down`` / ``keyboard_up`` of a
modifier: held for the clicks, drags and presses until released (another key is pressed at its
``keyboard_down``); ``keyboard_type`` and ``keyboard_insert_text``: a ``type``; ``goto``,
``go_back``, ``go_forward``: ``goto``, ``back``, ``forward``; ``send_msg_to_user(text)``: ``finish``
with ``text`` as the answer; ``report_infeasible(reason)``: ``finish`` with ``infeasible: reason``;
``noop(wait_ms)``: a pause, then a fresh picture. Coordinates are screenshot pixels (floats are
rounded); ``mouse_upload_file`` is refused: the environment has no files to upload.
"""

from __future__ import annotations

import ast
import re
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from .computer_use import keys
from .computer_use.session import CallFailed, Computer, drag_path, point

#: BrowserGym's action subsets this module runs, by BrowserGym's names (``noop`` is always in).
SUBSETS = {
    "chat": ("send_msg_to_user",),
    "infeas": ("report_infeasible",),
    "coord": ("scroll_at", "mouse_move", "mouse_up", "mouse_down", "mouse_click", "mouse_dblclick",
              "mouse_drag_and_drop", "mouse_upload_file", "keyboard_down", "keyboard_up", "keyboard_press",
              "keyboard_type", "keyboard_insert_text"),
    "nav": ("go_back", "go_forward", "goto"),
    "scroll": ("scroll",),
}
DEFAULT_SUBSETS = ("chat", "infeas", "coord", "nav")


class Error(Exception):
    """What Playwright raises for a bad key or a failed page operation (BrowserGym reports its
    class name, ``Error``)."""


# --------------------------------------------------------------------------- the parser

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_NUMBER = re.compile(r"[+-]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?")
_KEYWORDS = {"True": True, "False": False, "None": None}


class _NoCall(Exception):
    """The text at this place is not a call."""


class _Reader:
    def __init__(self, text: str, at: int) -> None:
        self.text, self.at = text, at

    def blank(self) -> None:
        """Skip spaces and comments."""
        text = self.text
        while self.at < len(text):
            if text[self.at].isspace():
                self.at += 1
            elif text[self.at] == "#":
                end = text.find("\n", self.at)
                self.at = len(text) if end < 0 else end
            else:
                return

    def take(self, char: str) -> bool:
        self.blank()
        if self.text.startswith(char, self.at):
            self.at += len(char)
            return True
        return False

    def element(self) -> Any:
        self.blank()
        text, at = self.text, self.at
        if at >= len(text):
            raise _NoCall
        if text[at] in "'\"":
            return self.string()
        if text[at] == "[":
            self.at += 1
            return self.items("]")
        if text[at] == "(":
            self.at += 1
            return tuple(self.items(")"))
        if text[at] == "{":
            self.at += 1
            return self.mapping()
        number = _NUMBER.match(text, at)
        if number:
            self.at = number.end()
            literal = number.group()
            is_int = not any(c in literal for c in ".eE")
            return int(literal) if is_int else float(literal)
        word = _IDENTIFIER.match(text, at)
        if word and word.group() in _KEYWORDS:
            self.at = word.end()
            return _KEYWORDS[word.group()]
        raise _NoCall

    def string(self) -> str:
        text, start = self.text, self.at
        quote = text[start : start + 3] if text[start : start + 3] in ('"""', "'''") else text[start]
        at = start + len(quote)
        while at < len(text):
            if text[at] == "\\":
                at += 2
                continue
            if text.startswith(quote, at):
                self.at = at + len(quote)
                # A literal, decoded by Python's own literal reader: nothing is evaluated.
                try:
                    return ast.literal_eval(text[start : self.at])
                except (SyntaxError, ValueError):
                    raise _NoCall from None
            if text[at] == "\n" and len(quote) == 1:
                raise _NoCall
            at += 1
        raise _NoCall

    def items(self, close: str) -> list:
        found: list = []
        while not self.take(close):
            if found and not self.take(","):
                raise _NoCall
            if self.take(close):
                break
            found.append(self.element())
        return found

    def mapping(self) -> dict:
        found: dict = {}
        while not self.take("}"):
            if found and not self.take(","):
                raise _NoCall
            if self.take("}"):
                break
            self.blank()
            if self.at >= len(self.text) or self.text[self.at] not in "'\"":
                raise _NoCall
            name = self.string()
            if not self.take(":"):
                raise _NoCall
            found[name] = self.element()
        return found

    def arguments(self) -> tuple[list, dict]:
        """After ``(``: positional literals, then ``name=literal``s, to ``)``."""
        args: list = []
        kwargs: dict = {}
        first = True
        while not self.take(")"):
            if not first and not self.take(","):
                raise _NoCall
            first = False
            if self.take(")"):
                break
            self.blank()
            named = _IDENTIFIER.match(self.text, self.at)
            after = named and re.match(r"\s*=(?!=)", self.text[named.end() :])
            if named and after and named.group() not in _KEYWORDS:
                self.at = named.end() + after.end()
                kwargs[named.group()] = self.element()
            elif kwargs:
                raise _NoCall  # a positional argument after a named one
            else:
                args.append(self.element())
        return args, kwargs


@dataclass(frozen=True)
class Call:
    """One call found in an action: its name and literal arguments."""

    name: str
    args: tuple = ()
    kwargs: dict = field(default_factory=dict)

    def __str__(self) -> str:
        shown = [repr(a) for a in self.args] + [f"{k}={v!r}" for k, v in self.kwargs.items()]
        return f"{self.name}({', '.join(shown)})"


def parse(text: str, strict: bool = False) -> list[Call]:
    """The calls in an action's text, in order (never evaluated). Not ``strict`` (BrowserGym's
    default): calls are found anywhere, what lies between them skipped; ``strict``: the text must
    be calls and comments only (``ValueError`` otherwise)."""
    calls: list[Call] = []
    at = 0
    while at < len(text):
        reader = _Reader(text, at)
        reader.blank()
        start = reader.at
        name = _IDENTIFIER.match(text, start)
        preceded = start > 0 and (text[start - 1].isalnum() or text[start - 1] == "_")
        if name and not preceded:
            reader.at = name.end()
            try:
                if not reader.take("("):
                    raise _NoCall
                args, kwargs = reader.arguments()
                calls.append(Call(name.group(), tuple(args), kwargs))
                at = reader.at
                continue
            except _NoCall:
                pass
        if start >= len(text):
            break
        if strict:
            raise ValueError(f"Not a function call at position {start}: {text[start:start + 40]!r}")
        at = name.end() if name else start + 1
    return calls


# --------------------------------------------------------------------------- the actions

# BrowserGym's signatures, as Python functions: calling one with the parsed literals binds them
# (and fails with Python's own TypeError words, as BrowserGym's exec does); it returns them named.
def noop(wait_ms: float = 1000): return locals()  # noqa: E704
def send_msg_to_user(text: str): return locals()  # noqa: E704
def report_infeasible(reason: str): return locals()  # noqa: E704
def scroll(delta_x: float, delta_y: float): return locals()  # noqa: E704
def scroll_at(x: int, y: int, dx: int, dy: int): return locals()  # noqa: E704
def mouse_move(x: float, y: float): return locals()  # noqa: E704
def mouse_up(x: float, y: float, button: str = "left"): return locals()  # noqa: E704
def mouse_down(x: float, y: float, button: str = "left"): return locals()  # noqa: E704
def mouse_click(x: float, y: float, button: str = "left"): return locals()  # noqa: E704
def mouse_dblclick(x: float, y: float, button: str = "left"): return locals()  # noqa: E704
def mouse_drag_and_drop(from_x: float, from_y: float, to_x: float, to_y: float): return locals()  # noqa: E704
def mouse_upload_file(x: float, y: float, file): return locals()  # noqa: E704
def keyboard_down(key: str): return locals()  # noqa: E704
def keyboard_up(key: str): return locals()  # noqa: E704
def keyboard_press(key: str): return locals()  # noqa: E704
def keyboard_type(text: str): return locals()  # noqa: E704
def keyboard_insert_text(text: str): return locals()  # noqa: E704
def goto(url: str): return locals()  # noqa: E704
def go_back(): return locals()  # noqa: E704
def go_forward(): return locals()  # noqa: E704


SIGNATURES: dict[str, Callable[..., dict]] = {
    f.__name__: f for f in (noop, send_msg_to_user, report_infeasible, scroll, scroll_at, mouse_move, mouse_up,
                            mouse_down, mouse_click, mouse_dblclick, mouse_drag_and_drop, mouse_upload_file,
                            keyboard_down, keyboard_up, keyboard_press, keyboard_type, keyboard_insert_text, goto,
                            go_back, go_forward)
}


@dataclass
class Outcome:
    """What one action (its calls) led to: the last observation (``result``, a ``StepResult``;
    after ``noop`` alone, the one before with a fresh ``picture``), ``last_action_error`` as
    BrowserGym words it (``""`` when every call ran), whether the episode is over, its reward,
    and the messages ``send_msg_to_user`` / ``report_infeasible`` sent."""

    result: Any
    last_action_error: str = ""
    picture: Any = None
    messages: list = field(default_factory=list)

    @property
    def done(self) -> bool:
        return bool(self.result.done) if self.result is not None else False

    @property
    def reward(self) -> Any:
        return self.result.reward if self.result is not None else None


class CoordActions:
    """Runs BrowserGym action strings on a session.

    Args:
        client: a ``BrowserClient`` in sync mode (``.sync()``), connected.
        subsets: BrowserGym's subsets taken (``chat``, ``infeas``, ``coord``, ``nav``, and
            ``scroll`` for the ``bid`` set's ``scroll``); ``noop`` always.
        multiaction: several calls per action (BrowserGym's default).
        strict: the text must hold calls only.
    """

    def __init__(self, client: Any, *, subsets: tuple = DEFAULT_SUBSETS, multiaction: bool = True,
                 strict: bool = False, sleep: Callable[[float], None] = time.sleep) -> None:
        self.computer = Computer(client, sleep=sleep)
        self.allowed = {"noop", *(name for subset in subsets for name in SUBSETS[subset])}
        self.multiaction = multiaction
        self.strict = strict
        self.held: list[str] = []  # modifiers down (keyboard_down)

    def reset(self, **kwargs: Any) -> Any:
        self.held = []
        return self.computer.reset(**kwargs)

    def step(self, action: str) -> Outcome:
        outcome = Outcome(result=self.computer.last)
        try:
            calls = parse(action, strict=self.strict)
            if not calls:
                raise ValueError("Received an empty action.")
            if len(calls) > 1 and not self.multiaction:
                raise ValueError("Received a multi-action, only single-actions are allowed.")
            for call in calls:
                if call.name not in self.allowed:
                    raise NameError(f"Invalid action type '{call.name}'.")
            for call in calls:
                arguments = SIGNATURES[call.name](*call.args, **call.kwargs)
                self._run(call, arguments, outcome)
        except CallFailed as failed:
            outcome.last_action_error = f"Error: {failed}"
        except Exception as failed:  # noqa: BLE001 - every failure is the action's, in BrowserGym's words
            outcome.last_action_error = f"{type(failed).__name__}: {failed}"
        outcome.result = self.computer.last
        return outcome

    def _run(self, call: Call, a: dict, outcome: Outcome) -> None:
        computer, name = self.computer, call.name

        def at(x: Any, y: Any) -> tuple[int, int]:
            return point(name, (x, y), "x, y")

        if name == "noop":
            outcome.picture = computer.wait(name, float(a["wait_ms"]) / 1000)
        elif name in ("send_msg_to_user", "report_infeasible"):
            text = a["text"] if name == "send_msg_to_user" else a["reason"]
            if not isinstance(text, str):
                raise ValueError(f"Forbidden value: {text} is not a string")
            outcome.messages.append({"role": "assistant" if name == "send_msg_to_user" else "infeasible", "message": text})
            computer.act(name, op="finish", text=text if name == "send_msg_to_user" else f"infeasible: {text}")
        elif name in ("mouse_click", "mouse_dblclick"):
            x, y = at(a["x"], a["y"])
            computer.act(name, op="click", x=x, y=y, button=_button(name, a["button"]),
                         count=2 if name == "mouse_dblclick" else None, modifiers=self.held or None)
        elif name in ("mouse_down", "mouse_up"):
            x, y = at(a["x"], a["y"])
            computer.act(name, op=name, x=x, y=y, button=_button(name, a["button"]))
        elif name == "mouse_move":
            x, y = at(a["x"], a["y"])
            computer.act(name, op="move", x=x, y=y)
        elif name == "mouse_drag_and_drop":
            path = drag_path(at(a["from_x"], a["from_y"]), at(a["to_x"], a["to_y"]))
            computer.act(name, op="drag", path=path, modifiers=self.held or None)
        elif name == "scroll_at":
            computer.scroll(name, round(float(a["dx"])), round(float(a["dy"])), at(a["x"], a["y"]))
        elif name == "scroll":
            computer.scroll(name, round(float(a["delta_x"])), round(float(a["delta_y"])), computer.cursor)
        elif name in ("keyboard_press", "keyboard_down", "keyboard_up"):
            self._key(name, a["key"])
        elif name in ("keyboard_type", "keyboard_insert_text"):
            if a["text"]:
                computer.act(name, op="type", text=str(a["text"]))
        elif name == "goto":
            computer.act(name, op="goto", url=str(a["url"]))
        elif name in ("go_back", "go_forward"):
            computer.act(name, op="back" if name == "go_back" else "forward")
        elif name == "mouse_upload_file":
            raise NotImplementedError("mouse_upload_file: this environment has no files to upload")

    def _key(self, name: str, key: Any) -> None:
        """A key by Playwright's name: pressed (with the modifiers held down), held down, or let up."""
        method = {"keyboard_press": "press", "keyboard_down": "down", "keyboard_up": "up"}[name]
        text = str(key)
        held = keys.modifier(text)
        if method != "press" and held is not None:
            if method == "down" and held not in self.held:
                self.held.append(held)
            if method == "up" and held in self.held:
                self.held.remove(held)
            return
        if method == "up":
            return  # another key went down and up at its keyboard_down
        try:
            names = keys.split_chord(text)
            chord = keys.chord([*self.held, *names])
        except keys.UnknownKey:
            raise Error(f'Keyboard.{method}: Unknown key: "{text}"') from None
        self.computer.act(name, op="press", text=chord)


def _button(name: str, button: Any) -> Optional[str]:
    if button not in ("left", "middle", "right"):
        raise ValueError(f"{name}: button should be 'left', 'middle' or 'right', not {button!r}")
    return None if button == "left" else button


__all__ = ["Call", "CoordActions", "DEFAULT_SUBSETS", "Error", "Outcome", "SIGNATURES", "SUBSETS", "parse"]

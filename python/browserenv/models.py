"""The wire models of the browser environment: what an agent sends and what it gets back.

They follow the seed's models.py (OpenEnv's Helium browser environment) field for field, with the
same rules, and add the gestures a real page needs (``move``, ``drag``, ``press``, ``select``, ...;
docs/wire.md §1.1): the seed's seven actions dump exactly as the seed's model dumps them. The server
publishes the same schema at ``GET /schema`` (``src/models/schema.rs``, ``src/models/fields.rs``),
and ``tests/python/test_package.py`` checks these constants, and the errors, against what a running
server says.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from openenv.core.env_server.types import Action, Observation, State
from pydantic import Field, ValidationError, model_serializer, model_validator
from pydantic_core import InitErrorDetails, PydanticCustomError

#: The screenshot's size in pixels: click coordinates are pixels of it (x 0..799, y 0..599).
SCREEN_WIDTH = 800
SCREEN_HEIGHT = 600
#: The most characters ``text`` may hold (typed text, a key name or an answer).
MAX_TEXT_CHARS = 2000
#: How far one scroll may go, in pixels, either way.
MAX_SCROLL = 1200
#: The seed's seven actions.
SEED_OPS = ("click", "type", "key", "scroll", "back", "wait", "finish")
#: Every action: the seed's seven, then the gestures this server adds.
OPS = SEED_OPS + ("move", "drag", "mouse_down", "mouse_up", "press", "select", "forward", "goto")
#: The keys ``key`` presses (CTRL+A selects all).
SUPPORTED_KEYS = ("ENTER", "TAB", "ESCAPE", "BACKSPACE", "CTRL+A", "UP", "DOWN", "LEFT", "RIGHT")
#: Mouse buttons (``button``; left when unset).
BUTTONS = ("left", "right", "middle")
#: Keys held during a click or a drag (``modifiers``), and before the key of a ``press`` chord.
MODIFIERS = ("SHIFT", "CTRL", "ALT", "META")
#: Every key ``press`` takes by name (ignoring case), alone or after modifiers: ``SHIFT+TAB``.
PRESS_KEYS = (
    *"ABCDEFGHIJKLMNOPQRSTUVWXYZ",
    *"0123456789",
    "ENTER", "TAB", "ESCAPE", "BACKSPACE", "SPACE", "UP", "DOWN", "LEFT", "RIGHT",
    "PAGE_UP", "PAGE_DOWN", "HOME", "END", "INSERT", "DELETE",
    *(f"F{n}" for n in range(1, 13)),
    "MINUS", "EQUAL", "BRACKET_LEFT", "BRACKET_RIGHT", "BACKSLASH", "SEMICOLON", "QUOTE",
    "BACKQUOTE", "COMMA", "PERIOD", "SLASH",
    "SHIFT", "CTRL", "ALT", "META",
    "CAPS_LOCK", "CONTEXT_MENU", "PRINT_SCREEN", "SCROLL_LOCK", "PAUSE", "NUM_LOCK",
    *(f"NUMPAD_{n}" for n in range(10)),
    "NUMPAD_ADD", "NUMPAD_SUBTRACT", "NUMPAD_MULTIPLY", "NUMPAD_DIVIDE", "NUMPAD_DECIMAL", "NUMPAD_ENTER",
)
#: A drag's path: 2 to 64 points.
MIN_PATH_POINTS, MAX_PATH_POINTS = 2, 64
#: ``press``'s ``repeat``, ``click``'s ``count``, the longest ``goto`` URL.
MAX_REPEAT, MAX_CLICK_COUNT, MAX_URL_CHARS = 20, 3, 8192

Op = Literal[OPS]  # Literal[("a", "b")] is Literal["a", "b"]
KeyName = Literal[SUPPORTED_KEYS]
Button = Literal[BUTTONS]
Modifier = Literal[MODIFIERS]
Point = tuple[Annotated[int, Field(ge=0, lt=SCREEN_WIDTH)], Annotated[int, Field(ge=0, lt=SCREEN_HEIGHT)]]

#: The fields each op acts on (the server's ``Op::fields``). A seed op also takes the seed's
#: other fields and ignores them, as the seed does; nothing else takes a field it does not act on.
OP_FIELDS = {
    "click": ("x", "y", "button", "count", "modifiers"),
    "type": ("text",),
    "key": ("text",),
    "scroll": ("x", "y", "dy", "dx"),
    "back": (),
    "wait": (),
    "finish": ("text",),
    "move": ("x", "y"),
    "drag": ("path", "button", "modifiers"),
    "mouse_down": ("x", "y", "button"),
    "mouse_up": ("x", "y", "button"),
    "press": ("text", "repeat"),
    "select": ("x", "y", "text"),
    "forward": (),
    "goto": ("url",),
}
_SEED_FIELDS = ("x", "y", "text", "dy")
_SEED_DEFAULTS = {"text": "", "dy": 0}
_ADDED_FIELDS = ("dx", "button", "count", "modifiers", "path", "repeat", "url")
_KEY_NAMES = {name.upper(): name for name in PRESS_KEYS}


def _key_summary() -> str:
    """The keys in a line, as the server writes them (``A-Z, 0-9, F1-F12, ENTER, ...``)."""
    rest = [k for k in PRESS_KEYS if not (len(k) == 1 or (k.startswith("F") and k[1:].isdigit()))]
    return ", ".join(["A-Z", "0-9", "F1-F12", *rest])


def chord_problem(text: str) -> str | None:
    """Why ``text`` is not a key or chord of ``press`` (the server's words), or None."""
    parts = [part.strip() for part in text.split("+")]
    up = lambda name: name.upper() if name.isascii() else name  # noqa: E731 (the server's ASCII case rule)
    if any(not part for part in parts):
        return f'"{text}" has an empty part: write keys by name joined with + (SHIFT+EQUAL for +)'
    *held, last = parts
    if up(last) not in _KEY_NAMES:
        return f'unknown key "{last}" (keys: {_key_summary()})'
    seen = {up(last)} & set(MODIFIERS)
    for part in held:
        if up(part) not in MODIFIERS:
            return f'"{part}" is not a modifier: only SHIFT, CTRL, ALT and META go before the key'
        if up(part) in seen:
            return f"{up(part)} is held twice"
        seen.add(up(part))
    return None


class BrowserAction(Action):
    """One browser action; x and y are pixels of the 800x600 screenshot.

    The seed's ``op``, ``x``, ``y``, ``text``, ``dy``, and this server's additions (each ``None``
    unless set, and then left out of ``model_dump()``, so a seed action dumps as the seed's)."""

    op: Op
    x: int | None = Field(default=None, ge=0, lt=SCREEN_WIDTH)
    y: int | None = Field(default=None, ge=0, lt=SCREEN_HEIGHT)
    text: str = Field(default="", max_length=MAX_TEXT_CHARS)
    dy: int = Field(default=0, ge=-MAX_SCROLL, le=MAX_SCROLL)
    dx: int | None = Field(default=None, ge=-MAX_SCROLL, le=MAX_SCROLL, description="op=scroll: pixels right (negative: left)")
    button: Button | None = Field(default=None, description="op=click, drag, mouse_down, mouse_up: the mouse button (left when null)")
    count: int | None = Field(default=None, ge=1, le=MAX_CLICK_COUNT, description="op=click: 2 double-clicks, 3 triple-clicks")
    modifiers: list[Modifier] | None = Field(default=None, max_length=len(MODIFIERS), description="op=click, drag: keys held meanwhile")
    path: list[Point] | None = Field(
        default=None, min_length=MIN_PATH_POINTS, max_length=MAX_PATH_POINTS,
        description="op=drag: points [x, y], pressed at the first, released at the last",
    )
    repeat: int | None = Field(default=None, ge=1, le=MAX_REPEAT, description="op=press: presses (1 when null)")
    url: str | None = Field(default=None, max_length=MAX_URL_CHARS, description="op=goto: an http(s) URL")

    @model_serializer(mode="wrap")
    def _dump_as_the_seed(self, handler: Any) -> dict:
        # An added field that is unset is left out: the seed's actions dump as the seed's do.
        dumped = handler(self)
        for field in _ADDED_FIELDS:
            if dumped.get(field, 0) is None:
                del dumped[field]
        return dumped

    @model_validator(mode="after")
    def _check_fields_for_op(self) -> "BrowserAction":
        # The server's words for the same rule (src/models/fields.rs, `build`).
        def given(field: str):
            value = getattr(self, field)
            return None if field in _SEED_DEFAULTS and value == _SEED_DEFAULTS[field] else value

        op = self.op
        strays = [
            f for f in (*(() if op in SEED_OPS else _SEED_FIELDS), *_ADDED_FIELDS)
            if given(f) is not None and f not in OP_FIELDS[op]
        ]
        if strays:
            takes = f"{op} takes {', '.join(OP_FIELDS[op])}" if OP_FIELDS[op] else f"{op} takes no fields"
            raise ValidationError.from_exception_data("BrowserAction", [
                InitErrorDetails(
                    type=PydanticCustomError(
                        "extra_forbidden", "Extra inputs are not permitted: {field} is not a field of {op} ({takes})",
                        {"field": field, "op": op, "takes": takes},
                    ),
                    loc=(field,),
                    input=[list(p) for p in given(field)] if field == "path" else given(field),
                ) for field in strays
            ])
        both = self.x is not None and self.y is not None
        if op in ("click", "move", "mouse_down", "mouse_up", "select") and not both:
            raise ValueError(f"{op} needs both x and y")
        if op == "type" and not self.text:
            raise ValueError("type needs non-empty text")
        if op == "key" and self.text not in SUPPORTED_KEYS:
            raise ValueError(f"key must be one of {', '.join(SUPPORTED_KEYS)}")
        if op == "drag" and self.path is None:
            raise ValueError(f"drag needs path: {MIN_PATH_POINTS} to {MAX_PATH_POINTS} points [x, y]")
        if op == "press":
            problem = chord_problem(self.text)
            if problem and not self.text:
                raise ValueError("press needs text: a key or chord such as ENTER, SHIFT+TAB or CTRL+C")
            if problem:
                raise ValueError(f'press: text "{self.text}" is not a key or chord: {problem}')
        if op == "select" and not self.text:
            raise ValueError("select needs text: the label of the option to choose")
        if op == "goto" and self.url is None:
            raise ValueError("goto needs url: an HTTP(S) URL")
        return self


class BrowserObservation(Observation):
    """What comes back after reset and every step: a base64 PNG, the URL and an error code
    (``""`` when the action worked). Everything else the server reports (title, timings, the
    task and its verdict, the page's text with ``BROWSER_OBSERVE_TEXT``) is in ``metadata``."""

    screenshot: str
    url: str
    error: str = ""


class BrowserState(State):
    """Episode metadata: ``episode_id`` and ``step_count``."""


__all__ = [
    "BUTTONS",
    "MAX_CLICK_COUNT",
    "MAX_PATH_POINTS",
    "MAX_REPEAT",
    "MAX_URL_CHARS",
    "MIN_PATH_POINTS",
    "MODIFIERS",
    "OP_FIELDS",
    "PRESS_KEYS",
    "SEED_OPS",
    "chord_problem",
    "BrowserAction",
    "BrowserObservation",
    "BrowserState",
    "KeyName",
    "MAX_SCROLL",
    "MAX_TEXT_CHARS",
    "OPS",
    "Op",
    "SCREEN_HEIGHT",
    "SCREEN_WIDTH",
    "SUPPORTED_KEYS",
]

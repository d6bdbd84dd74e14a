"""The wire models of the browser environment: what an agent sends and what it gets back.

They follow the seed's models.py (OpenEnv's Helium browser environment) field for field, with the
same rules; the server publishes the same schema at ``GET /schema`` (``src/models/schema.rs``), and
``tests/python/test_package.py`` checks these constants against what a running server says.
"""

from __future__ import annotations

from typing import Literal

from openenv.core.env_server.types import Action, Observation, State
from pydantic import Field, model_validator

#: The screenshot's size in pixels: click coordinates are pixels of it (x 0..799, y 0..599).
SCREEN_WIDTH = 800
SCREEN_HEIGHT = 600
#: The most characters ``text`` may hold (typed text, a key name or an answer).
MAX_TEXT_CHARS = 2000
#: How far one scroll may go, in pixels, either way.
MAX_SCROLL = 1200
#: The seven actions.
OPS = ("click", "type", "key", "scroll", "back", "wait", "finish")
#: The keys ``key`` presses (CTRL+A selects all).
SUPPORTED_KEYS = ("ENTER", "TAB", "ESCAPE", "BACKSPACE", "CTRL+A", "UP", "DOWN", "LEFT", "RIGHT")

Op = Literal[OPS]  # Literal[("a", "b")] is Literal["a", "b"]
KeyName = Literal[SUPPORTED_KEYS]


class BrowserAction(Action):
    """One browser action; x and y are pixels of the 800x600 screenshot."""

    op: Op
    x: int | None = Field(default=None, ge=0, lt=SCREEN_WIDTH)
    y: int | None = Field(default=None, ge=0, lt=SCREEN_HEIGHT)
    text: str = Field(default="", max_length=MAX_TEXT_CHARS)
    dy: int = Field(default=0, ge=-MAX_SCROLL, le=MAX_SCROLL)

    @model_validator(mode="after")
    def _check_fields_for_op(self) -> "BrowserAction":
        # The server's words for the same rule (src/models/validation.rs).
        if self.op == "click" and (self.x is None or self.y is None):
            raise ValueError("click needs both x and y")
        if self.op == "type" and not self.text:
            raise ValueError("type needs non-empty text")
        if self.op == "key" and self.text not in SUPPORTED_KEYS:
            raise ValueError(f"key must be one of {', '.join(SUPPORTED_KEYS)}")
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

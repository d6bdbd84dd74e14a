"""Wire models of the browser environment, as the seed's models.py defines them.

These are the caller-side pydantic models a Python OpenEnv user would write; the
Rust server must accept what they produce and produce what they accept.
"""

from typing import Literal

from openenv.core.env_server.types import Action, Observation, State
from pydantic import Field, model_validator

SUPPORTED_KEYS = (
    "ENTER",
    "TAB",
    "ESCAPE",
    "BACKSPACE",
    "CTRL+A",
    "UP",
    "DOWN",
    "LEFT",
    "RIGHT",
)


class BrowserAction(Action):
    """One browser action; x and y are pixels of the 800x600 screenshot."""

    op: Literal["click", "type", "key", "scroll", "back", "wait", "finish"]
    x: int | None = Field(default=None, ge=0, lt=800)
    y: int | None = Field(default=None, ge=0, lt=600)
    text: str = Field(default="", max_length=2000)
    dy: int = Field(default=0, ge=-1200, le=1200)

    @model_validator(mode="after")
    def _check_fields_for_op(self) -> "BrowserAction":
        if self.op == "click" and (self.x is None or self.y is None):
            raise ValueError("click requires both x and y")
        if self.op == "type" and not self.text:
            raise ValueError("type requires non-empty text")
        if self.op == "key" and self.text not in SUPPORTED_KEYS:
            raise ValueError(f"key text must be one of {', '.join(SUPPORTED_KEYS)}")
        return self


class BrowserObservation(Observation):
    """What comes back after reset and every step."""

    screenshot: str
    url: str
    error: str = ""


class BrowserState(State):
    """Episode metadata: episode_id and step_count."""

    pass

"""Wire models of the browser environment, as the seed's models.py defines them.

They are the `browserenv` package's (python/browserenv/models.py), not a copy: the package is
installed in the venv (tests/python/requirements.txt), and tests/python/test_package.py checks its
key names and limits against the schema and tools a running server publishes. The Rust server must
accept what these models produce and produce what they accept.
"""

from browserenv.models import (
    MAX_SCROLL,
    MAX_TEXT_CHARS,
    SCREEN_HEIGHT,
    SCREEN_WIDTH,
    SUPPORTED_KEYS,
    BrowserAction,
    BrowserObservation,
    BrowserState,
)

__all__ = [
    "MAX_SCROLL",
    "MAX_TEXT_CHARS",
    "SCREEN_HEIGHT",
    "SCREEN_WIDTH",
    "SUPPORTED_KEYS",
    "BrowserAction",
    "BrowserObservation",
    "BrowserState",
]

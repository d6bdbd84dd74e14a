"""Key names as the vendors and BrowserGym write them, turned into the server's ``press`` names.

One table for all of them: OpenAI's ``keypress`` (``CTRL``, ``ENTER``, ``ARROWLEFT``, ``CMD``),
Anthropic's xdotool keysyms (``ctrl+s``, ``Return``, ``Page_Up``, ``BackSpace``, ``KP_Enter``),
Gemini's ``key_combination`` (``Control+A``) and Playwright's, which BrowserGym's
``keyboard_press`` takes (``ControlOrMeta+a``, ``Shift+ArrowLeft``, ``KeyA``, ``Digit1``, ``#``).
A name is matched ignoring case, ``_``, ``-`` and spaces; a single character is the key that types
it on a US keyboard (``#`` is ``SHIFT+3``, ``A`` alone is ``SHIFT+A``). The server's own names
(``PAGE_DOWN``, ``BRACKET_LEFT``) are always understood: the list is ``browserenv.models.PRESS_KEYS``.
"""

from __future__ import annotations

from typing import Iterable, Sequence

from ..models import MODIFIERS, PRESS_KEYS


class UnknownKey(ValueError):
    """A key name none of the vocabularies has; the message names it."""


def _canonical(name: str) -> str:
    return "".join(c for c in name.lower() if c not in "_- ")


# Other names of the modifiers. ControlOrMeta is Control on Linux, which the server's browser is.
_MODIFIER_ALIASES = {
    "SHIFT": ("shift", "shiftleft", "shiftright", "shiftl", "shiftr", "lshift", "rshift"),
    "CTRL": ("ctrl", "control", "controlleft", "controlright", "controll", "controlr", "ctrlleft",
             "ctrlright", "lctrl", "rctrl", "controlormeta", "ctl"),
    "ALT": ("alt", "altleft", "altright", "altl", "altr", "option", "opt", "lalt", "ralt", "altgr"),
    "META": ("meta", "metaleft", "metaright", "metal", "metar", "cmd", "command", "super", "superl",
             "superr", "win", "windows", "os", "oskey", "hyper", "hyperl", "hyperr"),
}

# Other names of the other keys, by the server's name.
_KEY_ALIASES = {
    "ENTER": ("return", "kpreturn", "newline"),
    "ESCAPE": ("esc",),
    "BACKSPACE": ("back",),
    "SPACE": ("spacebar",),
    "UP": ("arrowup", "uparrow"),
    "DOWN": ("arrowdown", "downarrow"),
    "LEFT": ("arrowleft", "leftarrow"),
    "RIGHT": ("arrowright", "rightarrow"),
    "PAGE_UP": ("prior", "pgup"),
    "PAGE_DOWN": ("next", "pgdn", "pgdown"),
    "INSERT": ("ins",),
    "DELETE": ("del",),
    "MINUS": ("hyphen",),
    "EQUAL": ("equals",),
    "BRACKET_LEFT": ("bracketleft",),
    "BRACKET_RIGHT": ("bracketright",),
    "QUOTE": ("apostrophe",),
    "BACKQUOTE": ("grave", "backtick"),
    "CAPS_LOCK": ("capslock", "caps"),
    "CONTEXT_MENU": ("menu", "apps"),
    "PRINT_SCREEN": ("print", "printscreen", "prtsc", "sysreq"),
    "SCROLL_LOCK": ("scrolllock",),
    "PAUSE": ("break",),
    "NUM_LOCK": ("numlock",),
    "NUMPAD_ENTER": ("kpenter",),
    "NUMPAD_ADD": ("kpadd", "add"),
    "NUMPAD_SUBTRACT": ("kpsubtract", "subtract"),
    "NUMPAD_MULTIPLY": ("kpmultiply", "multiply"),
    "NUMPAD_DIVIDE": ("kpdivide", "divide"),
    "NUMPAD_DECIMAL": ("kpdecimal", "decimal"),
    **{f"NUMPAD_{n}": (f"kp{n}", f"numpad{n}") for n in range(10)},
    **{letter: (f"key{letter.lower()}",) for letter in "ABCDEFGHIJKLMNOPQRSTUVWXYZ"},
    **{digit: (f"digit{digit}",) for digit in "0123456789"},
}

# A character typed by a key of a US keyboard: the key, and whether SHIFT makes it.
_UNSHIFTED = {"-": "MINUS", "=": "EQUAL", "[": "BRACKET_LEFT", "]": "BRACKET_RIGHT", "\\": "BACKSLASH",
              ";": "SEMICOLON", "'": "QUOTE", "`": "BACKQUOTE", ",": "COMMA", ".": "PERIOD", "/": "SLASH",
              " ": "SPACE", "\n": "ENTER", "\t": "TAB"}
_SHIFTED = {"!": "1", "@": "2", "#": "3", "$": "4", "%": "5", "^": "6", "&": "7", "*": "8", "(": "9",
            ")": "0", "_": "MINUS", "+": "EQUAL", "{": "BRACKET_LEFT", "}": "BRACKET_RIGHT",
            "|": "BACKSLASH", ":": "SEMICOLON", '"': "QUOTE", "~": "BACKQUOTE", "<": "COMMA",
            ">": "PERIOD", "?": "SLASH"}
# xdotool names for the shifted symbols (its keysyms for the unshifted ones are in the table).
_SHIFTED_NAMES = {"exclam": "!", "at": "@", "numbersign": "#", "dollar": "$", "percent": "%",
                  "asciicircum": "^", "ampersand": "&", "asterisk": "*", "parenleft": "(",
                  "parenright": ")", "underscore": "_", "plus": "+", "braceleft": "{",
                  "braceright": "}", "bar": "|", "colon": ":", "quotedbl": '"', "asciitilde": "~",
                  "less": "<", "greater": ">", "question": "?"}

_NAMES: dict[str, str] = {_canonical(name): name for name in PRESS_KEYS}
for _name, _aliases in (*_MODIFIER_ALIASES.items(), *_KEY_ALIASES.items()):
    for _alias in _aliases:
        _NAMES.setdefault(_alias, _name)


def key(name: str) -> tuple[str, tuple[str, ...]]:
    """The server's key for one key name, and the modifiers typing it needs (``#``: ``3`` with
    ``SHIFT``). Raises ``UnknownKey``."""
    if len(name) == 1:
        if name in _UNSHIFTED:
            return _UNSHIFTED[name], ()
        if name in _SHIFTED:
            return _SHIFTED[name], ("SHIFT",)
        if name.isascii() and name.isalpha():
            return name.upper(), (("SHIFT",) if name.isupper() else ())
        if name.isdigit() and name.isascii():
            return name, ()
    canonical = _canonical(name)
    if canonical in _SHIFTED_NAMES:
        return key(_SHIFTED_NAMES[canonical])
    if canonical in _NAMES:
        return _NAMES[canonical], ()
    raise UnknownKey(f"unknown key {name!r}")


def modifier(name: str) -> str | None:
    """The server's modifier for a name (``ctrl``, ``Control``, ``CMD``, ``Shift_L``), or None."""
    found = _NAMES.get(_canonical(name))
    return found if found in MODIFIERS else None


def chord(names: Sequence[str]) -> str:
    """One chord of ``press`` from keys pressed together (``["CTRL", "a"]``, ``["Shift", "#"]``):
    the modifiers first, in the server's order, then the one key. A chord of modifiers alone
    presses the last. Raises ``UnknownKey`` (or for two keys that are not modifiers together)."""
    names = [n for n in names if n != ""]
    if not names:
        raise UnknownKey("no key given")
    held: list[str] = []
    last: str | None = None
    implied: tuple[str, ...] = ()
    for at, name in enumerate(names):
        alone = modifier(name)
        if alone is not None and (at < len(names) - 1 or last is not None):
            held.append(alone)
            continue
        pressed, needs = key(name)
        if last is not None:
            raise UnknownKey(
                f"{list(names)!r} presses two keys together ({last} and {pressed}): press them one after the other"
            )
        last, implied = pressed, needs
    if last is None:  # only modifiers: the last one is the key
        last = held.pop()
    elif not (held and len(last) == 1 and last.isalpha()):
        # A capital letter alone is typed with SHIFT; with other keys held (CTRL+A) it names the key.
        held.extend(implied)
    held_set = {m for m in held if m != last}
    return "+".join([*(m for m in MODIFIERS if m in held_set), last])


def split_chord(text: str, separator: str = "+") -> list[str]:
    """The key names of a chord written ``a+b+c`` (``ctrl++`` and ``Shift++`` end with the ``+``
    key, as Playwright and xdotool read them)."""
    if text == separator:
        return [separator]
    parts = text.split(separator)
    if text.endswith(separator + separator):
        parts = [*parts[:-2], separator]
    return [part.strip() if part.strip() else part for part in parts]


def chord_text(text: str, separator: str = "+") -> str:
    """``chord`` of a chord written as text (``ctrl+shift+Escape``, ``Control+A``)."""
    return chord(split_chord(text.strip() if text.strip() else text, separator))


def modifiers(names: Iterable[str]) -> list[str]:
    """The server's modifiers for names held during a pointer action (OpenAI's ``keys``,
    Anthropic's ``text``); raises ``UnknownKey`` for a name that is not a modifier."""
    held: list[str] = []
    for name in names:
        found = modifier(name)
        if found is None:
            raise UnknownKey(f"{name!r} is not a modifier key (shift, ctrl, alt, meta) to hold")
        if found not in held:
            held.append(found)
    return [m for m in MODIFIERS if m in held]


__all__ = ["UnknownKey", "chord", "chord_text", "key", "modifier", "modifiers", "split_chord"]

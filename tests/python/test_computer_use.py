"""The vendors' computer-use calls through ``browserenv.computer_use``, on real Chromium (issue 42).

Each call is built with the vendor's own SDK types (``openai``, ``anthropic``, ``google-genai``; no
network), run through its adapter on ``assets/pages/computer.html`` (which says every input it got
in its title), and each answer is parsed back with the SDK's types. Waits are timed by a stand-in
clock: what is asked for is checked, not slept.
"""

from __future__ import annotations

import base64
import io
import json

import pytest
from anthropic.types import ComputerToolset20260801Param, ToolResultBlockParam
from anthropic.types.beta import BetaToolComputerUse20250124Param, BetaToolComputerUse20251124Param, BetaToolUseBlock
from anthropic.types.computer_tool_use_block import ComputerToolUseBlock
from google.genai import types as gtypes
from openai.types.responses import ResponseComputerToolCall, ResponseInputItemParam, ToolParam
from openai.types.responses import computer_action as oa
from PIL import Image
from pydantic import TypeAdapter

from browserenv import BrowserClient
from browserenv.computer_use import Computer
from browserenv.computer_use import anthropic as claude
from browserenv.computer_use import gemini
from browserenv.computer_use import openai as cua
from conftest import launch_server, png_size


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with launch_server(["--max-sessions", "3", "--max-steps", "200"], tmp_path_factory.mktemp("cu")) as url:
        yield url


@pytest.fixture
def computer(server, pages_url):
    """A session on the recording page, with a clock that notes waits instead of sleeping."""
    with BrowserClient(base_url=server).sync() as client:
        waits: list[float] = []
        computer = Computer(client, sleep=waits.append)
        computer.waits = waits
        computer.reset(start_url=f"{pages_url}computer.html")
        yield computer


def page(computer: Computer) -> dict:
    """What the page recorded, as of the last step."""
    return json.loads(computer.last.observation.metadata["title"])


def events(computer: Computer) -> list[str]:
    return page(computer)["ev"]


# --------------------------------------------------------------------------- OpenAI

INPUT_ITEM = TypeAdapter(ResponseInputItemParam)


def openai_call(call_id: str, *actions, checks=()) -> ResponseComputerToolCall:
    return ResponseComputerToolCall(
        id=f"cu_{call_id}", call_id=call_id, type="computer_call", status="completed",
        pending_safety_checks=list(checks), actions=list(actions),
    )


def screenshot_of(output: dict) -> tuple[int, int]:
    url = output["output"]["image_url"]
    assert url.startswith("data:image/png;base64,")
    return png_size(url.split(",", 1)[1])


def test_openai_computer_calls_act_on_the_page_and_answer_with_screenshots(computer, pages_url):
    assert TypeAdapter(ToolParam).validate_python(cua.tool()) == {"type": "computer"}
    adapter = cua.OpenAIComputer(computer)

    def run(*actions):
        items = adapter.run(openai_call(f"c{len(computer.waits)}{len(actions)}", *actions))
        for item in items:
            INPUT_ITEM.validate_python(item)
        assert items[0]["type"] == "computer_call_output" and screenshot_of(items[0]) == (800, 600)
        return items

    items = run(oa.Click(type="click", button="left", x=100, y=35), oa.Type(type="type", text="hello world"),
                oa.Keypress(type="keypress", keys=["CTRL", "A"]), oa.Type(type="type", text="hi"))
    assert len(items) == 1 and "status" not in items[0]
    assert page(computer)["v"] == "hi" and "key:a+C" in events(computer)
    run(oa.Click(type="click", button="right", x=200, y=200))
    run(oa.Click(type="click", button="left", x=210, y=210, keys=["SHIFT"]))
    run(oa.Click(type="click", button="wheel", x=220, y=220))
    run(oa.DoubleClick(type="double_click", x=230, y=230))
    seen = events(computer)
    assert "contextmenu:2x0@200,200+" in seen and "click:0x1@210,210+S" in seen
    assert "auxclick:1x1@220,220+" in seen and "dblclick:0x2@230,230+" in seen
    run(oa.Move(type="move", x=450, y=35))
    assert page(computer)["hov"] is True
    run(oa.Drag(type="drag", path=[{"x": 100, "y": 150}, {"x": 150, "y": 160}, {"x": 200, "y": 170}], keys=["ALT"]))
    assert {"down:0@100,150+A", "up:0@200,170+A"} <= set(events(computer))
    run(oa.Scroll(type="scroll", x=600, y=150, scroll_x=0, scroll_y=300))
    assert page(computer)["bx"] == 300
    run(oa.Scroll(type="scroll", x=300, y=450, scroll_x=500, scroll_y=1500))  # two steps: 1200 + 300
    assert (page(computer)["sx"], page(computer)["sy"]) == (500, 1500)
    run(oa.Wait(type="wait"), oa.Screenshot(type="screenshot"))
    assert computer.waits == [cua.WAIT_SECONDS]
    # The mouse's back and forward buttons go through the history, as a browser does.
    computer.act("setup", op="goto", url=f"{pages_url}blank.html")
    run(oa.Click(type="click", button="back", x=5, y=5))
    assert computer.url.endswith("computer.html")
    run(oa.Click(type="click", button="forward", x=5, y=5))
    assert computer.url.endswith("blank.html")


def test_openai_calls_it_cannot_do_are_answered_as_failed_never_dropped(computer):
    adapter = cua.OpenAIComputer(computer)
    items = adapter.run(openai_call("bad", oa.Click(type="click", button="left", x=100, y=35),
                                    oa.Keypress(type="keypress", keys=["HYPERX"]), oa.Type(type="type", text="never")))
    output, message = (INPUT_ITEM.validate_python(item) for item in items)
    assert output["call_id"] == "bad" and output["status"] == "incomplete" and screenshot_of(output) == (800, 600)
    text = message["content"][0]["text"]
    assert message["role"] == "user" and "computer_call bad" in text and "keypress (action 2 of 3)" in text
    assert "unknown key 'HYPERX'" in text and "the 1 action(s) after it were not run" in text
    assert page(computer)["v"] == ""
    for action, words in [
        (oa.Click(type="click", button="left", x=900, y=10), "outside the 800x600 screen"),
        (oa.Move(type="move", x=10, y=10, keys=["SHIFT"]), "moving with keys held (SHIFT) is not supported"),
        (oa.Click(type="click", button="left", x=10, y=10, keys=["Q"]), "keys: 'Q' is not a modifier"),
    ]:
        items = adapter.run(openai_call("x", action))
        assert len(items) == 2 and words in items[1]["content"][0]["text"], items[1]
    checks = [{"id": "sc_1", "code": "malicious_instructions", "message": "careful"}]
    unapproved = adapter.run(openai_call("sc", oa.Screenshot(type="screenshot"), checks=checks))
    assert "pending safety checks were not acknowledged: malicious_instructions" in unapproved[1]["content"][0]["text"]
    approved = cua.OpenAIComputer(computer, approve_safety_checks=lambda c: True).run(
        openai_call("sc2", oa.Screenshot(type="screenshot"), checks=checks))
    assert len(approved) == 1 and approved[0]["acknowledged_safety_checks"][0]["id"] == "sc_1"


# --------------------------------------------------------------------------- Anthropic

TOOL_RESULT = TypeAdapter(ToolResultBlockParam)
TOOLSET_BLOCK = TypeAdapter(ComputerToolUseBlock)


def member(name: str, **arguments):
    """A toolset member's tool_use block, as the SDK parses it."""
    return TOOLSET_BLOCK.validate_python({"id": f"toolu_{name}", "type": "tool_use", "name": name, "input": arguments,
                                          "toolset_name": "computer", "caller": {"type": "direct"}})


def answer(adapter, *blocks) -> list[dict]:
    results = adapter.run(blocks)
    assert len(results) == len(blocks)
    for result in results:
        TOOL_RESULT.validate_python(result)
    return results


def image_of(result: dict) -> tuple[int, int]:
    image = next(block for block in result["content"] if block["type"] == "image")
    assert image["source"]["media_type"] == "image/png"
    return png_size(image["source"]["data"])


def test_anthropic_toolset_members_act_on_the_page_and_answer_with_images(computer, pages_url):
    TypeAdapter(ComputerToolset20260801Param).validate_python(claude.tool())
    TypeAdapter(BetaToolComputerUse20251124Param).validate_python(claude.tool("computer_20251124"))
    TypeAdapter(BetaToolComputerUse20250124Param).validate_python(claude.tool("computer_20250124"))
    adapter = claude.AnthropicComputer(computer)
    results = answer(adapter, member("left_click", coordinate=[100, 35]), member("type", text="hello"),
                     member("key", text="ctrl+a"), member("key", text="BackSpace"), member("type", text="abc"),
                     member("key", text="Left", repeat=2))
    assert all(r["toolset_name"] == "computer" and not r.get("is_error") for r in results)
    assert image_of(results[0]) == (800, 600) and f"URL: {pages_url}computer.html" in results[0]["content"][0]["text"]
    assert page(computer)["v"] == "abc"
    assert events(computer)[-2:] == ["key:ArrowLeft+", "key:ArrowLeft+"] and "key:a+C" in events(computer)
    answer(adapter, member("key", text="ctrl+a Delete"))
    assert page(computer)["v"] == ""
    answer(adapter, member("right_click", coordinate=[200, 200]), member("middle_click", coordinate=[210, 210]),
           member("double_click", coordinate=[220, 220]), member("triple_click", coordinate=[230, 230], text="shift"),
           member("left_click", coordinate=[240, 240], text="ctrl+shift"))
    seen = events(computer)
    assert {"contextmenu:2x0@200,200+", "auxclick:1x1@210,210+", "dblclick:0x2@220,220+", "click:0x3@230,230+S",
            "click:0x1@240,240+SC"} <= set(seen), seen
    answer(adapter, member("left_click_drag", start_coordinate=[100, 150], coordinate=[300, 250]))
    assert {"down:0@100,150+", "up:0@300,250+"} <= set(events(computer))
    answer(adapter, member("mouse_move", coordinate=[450, 35]))
    assert page(computer)["hov"] is True
    answer(adapter, member("left_mouse_down"), member("mouse_move", coordinate=[300, 200]), member("left_mouse_up"))
    seen = events(computer)
    assert seen.index("down:0@450,35+") < seen.index("up:0@300,200+"), seen
    cursor = answer(adapter, member("cursor_position"))[0]
    assert cursor["content"][0]["text"].startswith("X=300,Y=200")
    answer(adapter, member("scroll", coordinate=[600, 150], scroll_direction="down", scroll_amount=3))
    assert page(computer)["bx"] == 3 * claude.PIXELS_PER_SCROLL_UNIT
    answer(adapter, member("scroll", coordinate=[300, 450], scroll_direction="right", scroll_amount=2),
           member("scroll", coordinate=[300, 450], scroll_direction="down", scroll_amount=1, text="shift"))
    assert (page(computer)["sx"], page(computer)["sy"]) == (300, 0)
    answer(adapter, member("hold_key", text="shift", duration=1))
    held = claude.held_presses(1)
    assert held == 13 and all(e.startswith("key:Shift+") for e in events(computer)[-held:])
    waited, shot = answer(adapter, member("wait", duration=2), member("screenshot"))
    assert computer.waits == [2.0] and image_of(waited) == image_of(shot) == (800, 600)


def test_anthropic_zoom_is_the_region_drawn_again_larger(computer):
    adapter = claude.AnthropicComputer(computer)
    zoomed = answer(adapter, member("zoom", region=[560, 300, 780, 330]))[0]
    assert image_of(zoomed) == (800, 109), zoomed["content"][0]["text"]
    assert "Zoomed into [560, 300, 780, 330] at 3.63636x" in zoomed["content"][0]["text"]
    # The older tool's zoom (computer_20251124) is the same member.
    old = BetaToolUseBlock(id="toolu_z", type="tool_use", name="computer", input={"action": "zoom", "region": [0, 0, 400, 300]})
    assert image_of(answer(adapter, old)[0]) == (800, 600)
    # A field holding a secret is covered in a zoomed picture too, wherever it lands in it.
    computer.act("setup", op="click", x=660, y=355)
    computer.act("setup", op="type", text="hunter22")
    covered = answer(adapter, member("zoom", region=[540, 330, 780, 390]))[0]
    image = next(block for block in covered["content"] if block["type"] == "image")
    picture = Image.open(io.BytesIO(base64.b64decode(image["source"]["data"]))).convert("RGB")
    scale = picture.width / 240
    field = picture.crop((round(21 * scale), round(11 * scale), round(219 * scale), round(39 * scale)))
    assert field.getextrema() == ((0, 0), (0, 0), (0, 0)), "the secret field is drawn black"


def test_a_zoom_on_an_open_dropdown_shows_the_rows_a_click_hits(computer, pages_url):
    """The headless shell paints its own popup (grey, rows of 24 pixels) into a whole redrawn
    viewport, not into a clip: the zoom of an open dropdown is the drawn one (white, rows of 20),
    where a click chooses."""
    adapter = claude.AnthropicComputer(computer)
    computer.reset(start_url=f"{pages_url}shop.html")
    answer(adapter, member("left_click", coordinate=[180, 68]), member("key", text="Down"))
    zoomed = answer(adapter, member("zoom", region=[90, 80, 270, 230]))[0]
    image = next(block for block in zoomed["content"] if block["type"] == "image")
    picture = Image.open(io.BytesIO(base64.b64decode(image["source"]["data"]))).convert("RGB")
    scale = picture.width / 180
    at = lambda x, y: picture.getpixel((round((x - 90) * scale), round((y - 80) * scale)))  # noqa: E731
    red, _, blue = at(250, 81 + 20 + 10)
    assert blue > 150 and red < 80, "the second row (one DOWN) is highlighted where it is drawn"
    assert at(250, 81 + 2 * 20 + 10) == (255, 255, 255), "a drawn row is white, not the browser's grey"


def test_anthropic_older_tools_and_refusals(computer):
    adapter = claude.AnthropicComputer(computer)

    def old(action: str, **arguments):
        return BetaToolUseBlock(id=f"toolu_{action}", type="tool_use", name="computer", input={"action": action, **arguments})

    results = answer(adapter, old("left_click", coordinate=[100, 35]), old("type", text="old tool"),
                     old("key", text="Return"))
    assert "toolset_name" not in results[0] and page(computer)["v"] == "old tool"
    assert events(computer)[-1] == "key:Enter+"
    for block, words in [
        (member("key", text="ctrl+hyperx"), "key: unknown key 'hyperx'"),
        (member("left_click", coordinate=[900, 10]), "left_click: coordinate (900, 10) is outside the 800x600 screen"),
        (old("teleport", coordinate=[1, 1]), "teleport: not a member of the computer tool"),
        (member("left_click", coordinate=[5, 5], text="q"), "text: 'q' is not a modifier"),
        (member("zoom", region=[0, 0, 900, 10]), "region: the bottom-right corner (900, 10)"),
        (member("scroll", scroll_direction="down", scroll_amount=1, text="ctrl"), "scrolling with CTRL held"),
    ]:
        result = answer(adapter, block)[0]
        assert result["is_error"] is True and words in result["content"][0]["text"], result


# --------------------------------------------------------------------------- Gemini


def fc(name: str, **args) -> gtypes.FunctionCall:
    return gtypes.FunctionCall(name=name, args=args)


def responses(adapter, *calls) -> list[gtypes.FunctionResponse]:
    parts = [gtypes.Part.model_validate(part) for part in adapter.run(calls)]
    gtypes.Content(role="user", parts=parts)
    answers = [part.function_response for part in parts]
    for call, response in zip(calls, answers):
        assert response.name == call.name and response.response["url"].startswith("http")
        png = response.parts[0].inline_data
        assert png.mime_type == "image/png" and png_size(base64.b64encode(png.data).decode()) == (800, 600)
    return answers


def grid(x: int, y: int) -> dict:
    """Screenshot pixels as Gemini's 0-999 grid (the inverse of the adapter's mapping)."""
    return {"x": -(-x * 1000 // 800), "y": -(-y * 1000 // 600)}


def test_gemini_functions_act_on_the_page_on_its_grid(computer, pages_url):
    adapter = gemini.GeminiComputer(computer)
    config = gtypes.GenerateContentConfig(tools=[gtypes.Tool.model_validate(adapter.tool())])
    assert config.tools[0].computer_use.excluded_predefined_functions == ["search"]
    assert gemini.to_pixels(999, 999) == (799, 599) and gemini.to_pixels(0, 0) == (0, 0)
    answers = responses(adapter, fc("type_text_at", **grid(100, 35), text="gemini", press_enter=False),
                        fc("type_text_at", **grid(100, 35), text=" more", clear_before_typing=False))
    assert all("error" not in a.response for a in answers)
    assert page(computer)["v"] == "gemini more" and events(computer)[-1] == "key:Enter+"
    responses(adapter, fc("type_text_at", **grid(100, 35), text="fresh", press_enter=False))
    assert page(computer)["v"] == "fresh"
    responses(adapter, fc("click_at", **grid(200, 200)), fc("hover_at", **grid(450, 35)))
    assert "click:0x1@200,200+" in events(computer) and page(computer)["hov"] is True
    responses(adapter, fc("key_combination", keys="Control+A"))
    assert events(computer)[-1] == "key:a+C"
    responses(adapter, fc("drag_and_drop", **grid(100, 150), destination_x=grid(300, 250)["x"],
                          destination_y=grid(300, 250)["y"]))
    assert {"down:0@100,150+", "up:0@300,250+"} <= set(events(computer))
    responses(adapter, fc("scroll_at", **grid(600, 150), direction="down", magnitude=500))
    assert page(computer)["bx"] == 300  # 500 of 1000 units of 600 pixels
    responses(adapter, fc("scroll_document", direction="down"))
    assert page(computer)["sy"] > 0 and events(computer)[-1] == "key:PageDown+"
    responses(adapter, fc("scroll_document", direction="right"))
    assert page(computer)["sx"] == 400
    responses(adapter, fc("navigate", url=f"{pages_url}blank.html"), fc("go_back"))
    assert computer.url.endswith("computer.html")
    assert responses(adapter, fc("go_forward"))[0].response["url"].endswith("blank.html")
    responses(adapter, fc("wait_5_seconds"), fc("open_web_browser"))
    assert computer.waits == [5.0]


def test_gemini_calls_it_cannot_do_are_answered_with_an_error(computer, pages_url):
    adapter = gemini.GeminiComputer(computer)
    for call, words in [
        (fc("search"), "search: no search page is configured"),
        (fc("click_at", x=1000, y=5), "outside the 0-999 grid"),
        (fc("key_combination", keys="Control+Hyperx"), "unknown key 'Hyperx'"),
        (fc("open_app", app="mail"), "open_app: not a computer-use function"),
        (fc("navigate", url="file:///etc/passwd"), "url: expected an HTTP(S) URL"),
        (fc("click_at", x=5, y=5, safety_decision={"decision": "require_confirmation", "explanation": "cookies"}),
         "asks for a person's confirmation"),
    ]:
        response = responses(adapter, call)[0]
        assert words in response.response["error"], response.response
    confirmed = gemini.GeminiComputer(computer, confirm=lambda decision: True, search_url=f"{pages_url}blank.html")
    assert "search" not in confirmed.tool()["computer_use"]["excluded_predefined_functions"]
    answer = responses(confirmed, fc("click_at", x=5, y=5, safety_decision={"decision": "require_confirmation"}),
                       fc("search"))
    assert answer[0].response["safety_acknowledgement"] == "true" and "error" not in answer[1].response
    assert answer[1].response["url"].endswith("blank.html")

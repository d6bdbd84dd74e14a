"""How soon after an input a picture shows the input's effect (docs/benchmark.md, "Why a step is
not one frame").

The raw CDP floor of a click or key step is the input's answer and a screencast's first frame:
one frame of the compositor. The server's settle waits for two animation frames begun since the
page's last change, then takes the compositor's next frame. This script takes, after the same
input, a picture at each earlier point and says how often it was not the settled one (the
picture a screencast shows STILL seconds later, with nothing else happening):

  two-frames      two animation frames, then a screencast's first frame (the server's order)
  one-frame       one animation frame, then a screencast's first frame
  one-frame-post  one animation frame and the task after it (the frame's commit), then a
                  screencast's first frame
  at-once         a screencast's first frame right after the input's answer (the floor)
  redraw-fast     Page.captureScreenshot with optimizeForSpeed right after the input's answer:
                  it has the page draw a new frame and copies it once presented

on effects.html (a click that turns over forty tiles with shadows: heavy software raster) and
form.html (a key typed into a field). Each step also says the CPU time of every Chromium process.

Usage:
  python3 -m http.server -d assets/pages 8765 &
  .venv/bin/python tests/python/capture_order.py http://127.0.0.1:8765/ [--steps 30]
"""

import argparse
import asyncio
import base64
import hashlib
import shutil
import statistics
import time

import websockets

from capture_paths import CLOCK_TICKS, Cdp, cpu_ticks_by_type, kill_tree
from step_cpu import launch

ORDERS = ["two-frames", "one-frame", "one-frame-post", "at-once", "redraw-fast"]
ONE_FRAME = "new Promise(r => requestAnimationFrame(() => r(1)))"
TWO_FRAMES = "new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => r(1))))"
# The task that follows a frame's callbacks runs once the frame has been committed.
ONE_FRAME_POST = """new Promise(r => requestAnimationFrame(() => {
  const channel = new MessageChannel(); channel.port1.onmessage = () => r(1); channel.port2.postMessage(0); }))"""
# Long enough for any frame, raster or capture still under way to be over.
STILL = 0.35


class Tab:
    def __init__(self, cdp, session):
        self.cdp, self.session, self.frames = cdp, session, asyncio.Queue()

    def call(self, method, params=None):
        return self.cdp.call(method, params, self.session)

    async def wait(self, expression):
        params = {"expression": expression, "awaitPromise": True, "returnByValue": True}
        await self.call("Runtime.evaluate", params)

    async def frame(self):
        while not self.frames.empty():
            self.frames.get_nowait()
        await self.call("Page.startScreencast", {"format": "png"})
        frame = await asyncio.wait_for(self.frames.get(), 30)
        await asyncio.gather(self.call("Page.stopScreencast"),
                             self.call("Page.screencastFrameAck", {"sessionId": frame["sessionId"]}))
        return frame["data"]

    async def picture(self, order):
        if order == "two-frames":
            await self.wait(TWO_FRAMES)
        elif order == "one-frame":
            await self.wait(ONE_FRAME)
        elif order == "one-frame-post":
            await self.wait(ONE_FRAME_POST)
        if order == "redraw-fast":
            shot = await self.call("Page.captureScreenshot", {"format": "png", "optimizeForSpeed": True})
            return shot["data"]
        return await self.frame()


def pixels(data):
    return hashlib.sha1(base64.b64decode(data)).hexdigest()


async def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("base_url", help="where assets/pages is served, ending in /")
    parser.add_argument("--chromium", default="/usr/lib/chromium/chromium-headless-shell")
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--orders", default=",".join(ORDERS))
    args = parser.parse_args()
    browser, profile, address = await launch(args.chromium, [])
    try:
        async with websockets.connect(address, max_size=None) as socket:
            cdp = Cdp(socket)
            reader = asyncio.create_task(cdp.read())
            context = (await cdp.call("Target.createBrowserContext"))["browserContextId"]
            target = (await cdp.call("Target.createTarget",
                                     {"url": "about:blank", "browserContextId": context}))["targetId"]
            session = (await cdp.call("Target.attachToTarget",
                                      {"targetId": target, "flatten": True}))["sessionId"]
            tab = Tab(cdp, session)
            cdp.listeners.append(lambda m: m.get("sessionId") == session
                                 and m["method"] == "Page.screencastFrame"
                                 and tab.frames.put_nowait(m["params"]))
            await tab.call("Page.enable")
            await tab.call("Emulation.setDeviceMetricsOverride",
                           {"width": 800, "height": 600, "deviceScaleFactor": 1, "mobile": False})

            async def mouse(kind, x, y):
                await tab.call("Input.dispatchMouseEvent",
                               {"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1})

            async def click():
                await mouse("mousePressed", 200, 120)
                await mouse("mouseReleased", 200, 120)

            async def key():
                await tab.call("Input.dispatchKeyEvent", {"type": "keyDown", "key": "a", "text": "a"})
                await tab.call("Input.dispatchKeyEvent", {"type": "keyUp", "key": "a"})

            print("| page | order | median ms | p90 ms | pictures not the settled one | Chromium CPU ms per step |")
            print("|---|---|---|---|---|---|")
            for page, act in (("effects.html", click), ("form.html", key)):
                await tab.call("Page.navigate", {"url": args.base_url + page})
                await asyncio.sleep(1)
                if page == "form.html":
                    await mouse("mousePressed", 250, 115)
                    await mouse("mouseReleased", 250, 115)
                else:
                    await tab.call("Input.dispatchMouseEvent", {"type": "mouseMoved", "x": 200, "y": 120})
                await asyncio.sleep(STILL)
                for order in args.orders.split(","):
                    times, wrong, ticks = [], 0, 0
                    for step in range(args.steps):
                        before = sum(cpu_ticks_by_type(browser.pid).values())
                        started = time.perf_counter()
                        await act()
                        taken = await tab.picture(order)
                        times.append((time.perf_counter() - started) * 1000)
                        ticks += sum(cpu_ticks_by_type(browser.pid).values()) - before
                        await asyncio.sleep(STILL)
                        wrong += pixels(taken) != pixels(await tab.frame())
                        if page == "form.html" and step % 10 == 9:  # empty the field now and then
                            for kind in ("rawKeyDown", "keyUp"):
                                await tab.call("Input.dispatchKeyEvent", {"type": kind, "key": "a", "code": "KeyA",
                                                                          "windowsVirtualKeyCode": 65, "modifiers": 2})
                            for kind in ("rawKeyDown", "keyUp"):
                                await tab.call("Input.dispatchKeyEvent", {"type": kind, "key": "Backspace",
                                                                          "code": "Backspace", "windowsVirtualKeyCode": 8})
                            await asyncio.sleep(STILL)
                    times.sort()
                    print(f"| {page} | {order} | {statistics.median(times):.0f} | {times[int(len(times) * 0.9)]:.0f} | "
                          f"{wrong} of {args.steps} | {ticks * 1000 / CLOCK_TICKS / args.steps:.1f} |", flush=True)
            reader.cancel()
    finally:
        kill_tree(browser.pid)
        browser.wait()
        shutil.rmtree(profile, ignore_errors=True)


if __name__ == "__main__":
    asyncio.run(main())

"""Where a scroll step's time goes, frame by frame, on raw CDP (docs/benchmark.md, "Where a reset's
and a scroll's time goes").

A scroll step is the wheel, the settle (the page quiet, and two animation frames begun since its
last change) and a screencast's first frame. Back to back, steps lock onto the display's 60 Hz,
so a step's time is a whole number of frames plus the PNG. This script times, for STEPS wheels
of 60 pixels on PAGE_URL (its own headless shell, the server's rendering flags, one tab):

  sequential  the wheel answered, then two animation frames asked for (the server's order): when
              the wheel was answered, when each frame began, when the page's `scroll` event came,
              and the step with its first screencast frame
  pipelined   the same with the frames asked for before the wheel is answered
  settled     a screencast kept running through the wheel: the first frame that already shows
              what the page looks like 400 ms later (the earliest a settled picture exists), and
              whether a wheel followed at once by a screencast's first frame (the raw floor of
              `make bench`) shows it

Usage:
  python3 -m http.server -d assets/pages 8765 &
  .venv/bin/python tests/python/scroll_frames.py http://127.0.0.1:8765/long.html [--steps 25]
"""

import argparse
import asyncio
import base64
import hashlib
import shutil
import statistics
import tempfile
import time

import websockets

from capture_paths import Cdp, kill_tree, launch

# Logs the page's scroll events; the frames are asked for by FRAMES below.
LOG_SCROLLS = """window.__scrolls = [];
addEventListener('scroll', () => __scrolls.push(performance.now()), {passive: true});"""
# Two animation frames from now: when this began, when each frame began, and the scroll events
# since the last call, all in the page's milliseconds.
FRAMES = """new Promise(done => { const start = performance.now();
  requestAnimationFrame(() => { const first = performance.now();
    requestAnimationFrame(() => done([start, first, performance.now(), __scrolls.splice(0)])); }); })"""
WHEEL = {"type": "mouseWheel", "x": 400, "y": 300, "deltaX": 0}


class Tab:
    def __init__(self, cdp, session):
        self.cdp, self.session, self.frames = cdp, session, asyncio.Queue()
        cdp.listeners.append(self.hear)

    def hear(self, message):
        if message.get("sessionId") == self.session and message["method"] == "Page.screencastFrame":
            self.frames.put_nowait({**message["params"], "arrived": time.perf_counter()})

    def call(self, method, params=None):
        return self.cdp.call(method, params, self.session)

    async def first_frame(self):
        """A screencast's first frame, as the server takes it."""
        await self.call("Page.startScreencast", {"format": "png"})
        frame = await asyncio.wait_for(self.frames.get(), 5)
        await self.call("Page.stopScreencast")
        await self.call("Page.screencastFrameAck", {"sessionId": frame["sessionId"]})
        return frame

    async def wheel(self, step):
        return await self.call("Input.dispatchMouseEvent", {**WHEEL, "deltaY": 60 if step % 6 < 3 else -60})


def picture(frame):
    return hashlib.sha1(base64.b64decode(frame["data"])).hexdigest()


async def timed_steps(tab, steps, pipelined):
    rows = []
    for step in range(steps):
        began = time.perf_counter()
        answered = []
        wheel = asyncio.ensure_future(tab.wheel(step))
        wheel.add_done_callback(lambda _: answered.append(time.perf_counter()))
        if not pipelined:
            await wheel
        ask = {"expression": FRAMES, "awaitPromise": True, "returnByValue": True}
        frames = asyncio.ensure_future(tab.call("Runtime.evaluate", ask))
        await wheel
        start, first, second, scrolls = (await frames)["result"]["value"]
        await tab.first_frame()
        done = time.perf_counter()
        scroll = scrolls[0] - start if scrolls else float("nan")
        rows.append(((answered[0] - began) * 1000, first - start, second - start, scroll, (done - began) * 1000))
    return rows


async def settled(tab, steps):
    earliest, floor_right = [], 0
    for step in range(steps):
        await tab.call("Page.startScreencast", {"format": "png"})
        first = await asyncio.wait_for(tab.frames.get(), 5)
        await tab.call("Page.screencastFrameAck", {"sessionId": first["sessionId"]})
        began = time.perf_counter()
        await tab.wheel(step)
        seen = []
        while True:
            left = began + 0.4 - time.perf_counter()
            try:
                frame = await asyncio.wait_for(tab.frames.get(), max(left, 0.001))
            except asyncio.TimeoutError:
                break
            seen.append((frame["arrived"] - began, picture(frame)))
            await tab.call("Page.screencastFrameAck", {"sessionId": frame["sessionId"]})
        await tab.call("Page.stopScreencast")
        final = picture(await tab.first_frame())
        earliest.append(next((t * 1000 for t, p in seen if p == final), float("nan")))
        # The raw floor: a wheel, then at once a screencast's first frame.
        await tab.wheel(step + 1)
        quick = picture(await tab.first_frame())
        await asyncio.sleep(0.4)
        floor_right += quick == picture(await tab.first_frame())
    return earliest, floor_right


async def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("page_url")
    parser.add_argument("--chromium", default=shutil.which("chromium-headless-shell") or shutil.which("chromium"))
    parser.add_argument("--steps", type=int, default=25)
    args = parser.parse_args()
    profile = tempfile.mkdtemp(prefix="scroll-frames-")
    browser, address = await launch(args.chromium, "frame", profile)
    try:
        async with websockets.connect(address, max_size=None, compression=None) as socket:
            cdp = Cdp(socket)
            reader = asyncio.create_task(cdp.read())
            context = (await cdp.call("Target.createBrowserContext"))["browserContextId"]
            target = (await cdp.call("Target.createTarget", {"url": "about:blank", "browserContextId": context}))["targetId"]
            session = (await cdp.call("Target.attachToTarget", {"targetId": target, "flatten": True}))["sessionId"]
            tab = Tab(cdp, session)
            await tab.call("Page.enable")
            await tab.call("Emulation.setDeviceMetricsOverride", {"width": 800, "height": 600, "deviceScaleFactor": 1, "mobile": False})
            await tab.call("Page.addScriptToEvaluateOnNewDocument", {"source": LOG_SCROLLS})
            await tab.call("Page.navigate", {"url": args.page_url})
            await asyncio.sleep(1)
            await tab.first_frame()
            print(f"{args.page_url}, {args.steps} steps each, medians in ms")
            print("| order | wheel answered | 1st frame began | 2nd frame began | scroll event | step with its PNG |")
            print("|---|---|---|---|---|---|")
            for name, pipelined in (("sequential", False), ("pipelined", True)):
                rows = await timed_steps(tab, args.steps, pipelined)
                cells = [statistics.median([r[i] for r in rows if r[i] == r[i]] or [float("nan")]) for i in range(5)]
                print(f"| {name} | " + " | ".join(f"{c:.1f}" for c in cells) + " |")
            print("(frame and scroll times from when the frames were asked for)")
            earliest, floor_right = await settled(tab, args.steps)
            shown = [t for t in earliest if t == t]
            print(f"settled picture first sent {statistics.median(shown):.1f} ms after the wheel "
                  f"({len(shown)} of {args.steps}); the raw floor's picture was the settled one "
                  f"{floor_right} of {args.steps} times")
            reader.cancel()
    finally:
        kill_tree(browser.pid)
        browser.wait()
        shutil.rmtree(profile, ignore_errors=True)


if __name__ == "__main__":
    asyncio.run(main())

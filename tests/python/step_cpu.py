"""Where Chromium's CPU goes in a step, part by part (docs/benchmark.md, "Where a step's CPU goes").

A server's step is a wheel (or click, or keys), the settle (the page probe's `settle`: the page
quiet and two animation frames begun since its last change), the page's facts (the probe's
`facts`, and the URL from the browser) and the picture (a screencast's first frame: the
compositor's frame copied, then encoded as PNG in the browser process). This script does those
parts on raw CDP with the server's probe (server/src/chromium/page/probe.js) and rendering flags, adding
one part at a time, with TABS tabs stepping at once (in one browser, or each in a browser of its
own as BROWSER_ISOLATION=process runs them), and prints the CPU time of every Chromium process
per step, by process type: the difference between two rows is what a part costs.

  wheel          the wheel event alone (answered once the renderer has it)
  +frames        two animation frames asked for (what the settle waits for)
  +settle        the probe's settle instead (its frames and its polls)
  +facts         the probe's facts and the navigation history (the URL)
  +frame         a screencast's first frame: copy and PNG
  +tiny          a screencast's first frame at 80x60: the copy's and the PNG's work that does
                 not grow with the picture
  +redraw-fast   Page.captureScreenshot with optimizeForSpeed instead of the screencast

Usage:
  python3 -m http.server -d assets/pages 8765 &
  .venv/bin/python tests/python/step_cpu.py http://127.0.0.1:8765/long.html [--tabs 8]
      [--browsers 1|TABS] [--steps 30] [--parts wheel,wheel+frames,...] [--flags=--in-process-gpu]
"""

import argparse
import asyncio
import contextlib
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import websockets

from capture_paths import CLOCK_TICKS, Cdp, cpu_ticks_by_type, kill_tree

PROBE = (Path(__file__).parents[2] / "server/src/chromium/page/probe.js").read_text()
# The server's launch flags that change how pages are drawn or what runs beside them
# (server/src/chromium/launch/process.rs), without its DevTools pipe, sandbox and profile handling.
FLAGS = [
    "--headless", "--disable-gpu", "--no-sandbox", "--disable-dev-shm-usage", "--disable-quic",
    "--no-first-run", "--disable-background-networking", "--disable-component-update",
    "--disable-sync", "--disable-extensions", "--disable-default-apps",
    "--disable-features=Translate,MediaRouter,OptimizationHints,AutofillServerCommunication,PasswordLeakDetection",
    "--disable-popup-blocking", "--disable-smooth-scrolling", "--password-store=basic",
    "--mute-audio", "--window-size=800,600", "--remote-debugging-port=0",
]
PARTS = ["wheel", "wheel+frames", "wheel+settle", "wheel+settle+facts",
         "wheel+settle+facts+frame", "wheel+settle+tiny", "wheel+settle+facts+redraw-fast"]
TWO_FRAMES = "new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))"
# The server's settle with a zero bound (BROWSER_ACTION_WAIT_SECONDS=0) and the server's numbers.
SETTLE = "window.__browserenv.settle(30, 2, 300, 0, 0)"


async def launch(chromium, flags):
    profile = tempfile.mkdtemp(prefix="step-cpu-")
    browser = subprocess.Popen(
        [chromium, *FLAGS, *flags, f"--user-data-dir={profile}", "about:blank"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )
    port_file = os.path.join(profile, "DevToolsActivePort")
    for _ in range(400):
        if os.path.exists(port_file):
            lines = open(port_file).read().split()
            if len(lines) == 2:
                return browser, profile, f"ws://127.0.0.1:{lines[0]}{lines[1]}"
        await asyncio.sleep(0.05)
    kill_tree(browser.pid)
    browser.wait()
    shutil.rmtree(profile, ignore_errors=True)
    raise RuntimeError("Chromium did not open its DevTools port")


class Tab:
    """A tab in a browser context of its own, with the probe in every document."""

    def __init__(self, cdp, session):
        self.cdp, self.session, self.frames = cdp, session, asyncio.Queue()

    def call(self, method, params=None):
        return self.cdp.call(method, params, self.session)

    def evaluate(self, expression, wait=False):
        params = {"expression": expression, "awaitPromise": wait, "returnByValue": True}
        return self.call("Runtime.evaluate", params)

    async def screencast_frame(self, size=None):
        while not self.frames.empty():
            self.frames.get_nowait()
        params = {"format": "png", **({"maxWidth": size[0], "maxHeight": size[1]} if size else {})}
        await self.call("Page.startScreencast", params)
        frame = await asyncio.wait_for(self.frames.get(), 30)
        await asyncio.gather(self.call("Page.stopScreencast"),
                             self.call("Page.screencastFrameAck", {"sessionId": frame["sessionId"]}))

    async def step(self, parts, number):
        if "wheel" in parts:
            wheel = {"type": "mouseWheel", "x": 400, "y": 300, "deltaX": 0,
                     "deltaY": 600 if number % 2 == 0 else -600}
            await self.call("Input.dispatchMouseEvent", wheel)
        if "frames" in parts:
            await self.evaluate(TWO_FRAMES, wait=True)
        if "settle" in parts:
            await self.evaluate(SETTLE, wait=True)
        if "facts" in parts:
            await asyncio.gather(self.evaluate("window.__browserenv.facts(20000)"),
                                 self.call("Page.getNavigationHistory"))
        if "frame" in parts:
            await self.screencast_frame()
        if "tiny" in parts:
            await self.screencast_frame((80, 60))
        if "redraw-fast" in parts:
            await self.call("Page.captureScreenshot", {"format": "png", "optimizeForSpeed": True})


async def open_tab(cdp, url):
    context = (await cdp.call("Target.createBrowserContext"))["browserContextId"]
    target = (await cdp.call("Target.createTarget",
                             {"url": "about:blank", "browserContextId": context}))["targetId"]
    session = (await cdp.call("Target.attachToTarget",
                              {"targetId": target, "flatten": True}))["sessionId"]
    tab = Tab(cdp, session)
    metrics = {"width": 800, "height": 600, "deviceScaleFactor": 1, "mobile": False}
    for method, params in (("Page.enable", None), ("Emulation.setDeviceMetricsOverride", metrics),
                           ("Page.setFontFamilies", {"fontFamilies": {"fixed": "Monospace"}}),
                           ("Page.addScriptToEvaluateOnNewDocument", {"source": PROBE}),
                           ("Page.navigate", {"url": url})):
        await tab.call(method, params)
    return tab


async def measure(args, parts):
    browsers, profiles, tabs = [], [], []
    async with contextlib.AsyncExitStack() as stack:
        try:
            cdps = []
            for _ in range(args.browsers):
                browser, profile, address = await launch(args.chromium, args.flags.split())
                browsers.append(browser)
                profiles.append(profile)
                socket = await stack.enter_async_context(websockets.connect(address, max_size=None))
                cdp = Cdp(socket)
                stack.push_async_callback(cancel, asyncio.create_task(cdp.read()))
                cdps.append(cdp)
            by_session = {}

            def hear(message):
                if message.get("method") == "Page.screencastFrame":
                    by_session[message["sessionId"]].frames.put_nowait(message["params"])

            for cdp in cdps:
                cdp.listeners.append(hear)
            for number in range(args.tabs):
                tab = await open_tab(cdps[number % len(cdps)], args.url)
                by_session[tab.session] = tab
                tabs.append(tab)
            await asyncio.sleep(2)
            for tab in tabs:
                for number in range(2):
                    await tab.step(parts, number)
            times = []

            async def steps_of(tab):
                for number in range(args.steps):
                    started = time.perf_counter()
                    await tab.step(parts, number)
                    times.append((time.perf_counter() - started) * 1000)

            def ticks():
                total = {}
                for browser in browsers:
                    for kind, spent in cpu_ticks_by_type(browser.pid).items():
                        total[kind] = total.get(kind, 0) + spent
                return total

            before, started = ticks(), time.perf_counter()
            await asyncio.gather(*(steps_of(tab) for tab in tabs))
            wall, after = time.perf_counter() - started, ticks()
        finally:
            for browser in browsers:
                kill_tree(browser.pid)
                browser.wait()
            for profile in profiles:
                shutil.rmtree(profile, ignore_errors=True)
    count = len(times)
    per_step = {kind: (after[kind] - before.get(kind, 0)) * 1000 / CLOCK_TICKS / count for kind in after}
    kinds = ", ".join(f"{kind} {ms:.1f}" for kind, ms in sorted(per_step.items(), key=lambda x: -x[1]) if ms >= 0.05)
    print(f"| {'+'.join(parts)} | {args.tabs} | {args.browsers} | {statistics.median(times):.0f} | "
          f"{count / wall:.0f} | {sum(per_step.values()):.1f} | {kinds} |", flush=True)


async def cancel(task):
    task.cancel()


async def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("url")
    parser.add_argument("--chromium", default="/usr/lib/chromium/chromium-headless-shell")
    parser.add_argument("--tabs", type=int, default=8)
    parser.add_argument("--browsers", type=int, default=1)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--parts", default=",".join(PARTS))
    parser.add_argument("--flags", default="", help="more Chromium flags, space-separated")
    args = parser.parse_args()
    if args.tabs < 1 or args.steps < 1 or not 1 <= args.browsers <= args.tabs:
        parser.error("--tabs and --steps need at least 1, --browsers 1 to --tabs")
    print("| parts | tabs | browsers | median ms | steps/s | Chromium CPU ms per step | by process |")
    print("|---|---|---|---|---|---|---|")
    for parts in args.parts.split(","):
        await measure(args, parts.split("+"))


if __name__ == "__main__":
    asyncio.run(main())

"""The official MCP Python SDK 2.x against ``URL``: it first asks for the newest protocol revision
(which has no sessions), is told the server's, and falls back to ``initialize``. Prints one JSON
line for ``test_mcp.py``. Usage: ``mcp2_client.py URL TASK ANSWER``."""

import asyncio
import base64
import json
import struct
import sys
from importlib.metadata import version

from mcp import Client


async def main(url: str, task: str, answer: str) -> dict:
    async with Client(url) as client:
        tools = await client.list_tools()
        first = await client.call_tool("reset", {"task_id": task})
        image = next(block for block in first.content if block.type == "image")
        png = base64.b64decode(image.data)
        assert png[:8] == b"\x89PNG\r\n\x1a\n"
        clicked = await client.call_tool("click", {"x": 312, "y": 235})
        done = await client.call_tool("finish", {"answer": answer})
        return {
            "sdk": version("mcp"),
            "protocol": client.protocol_version,
            "tools": [tool.name for tool in tools.tools],
            "png": list(struct.unpack(">II", png[16:24])),
            "clicked_url": clicked.structured_content["url"],
            "reward": done.structured_content["reward"],
        }


print(json.dumps(asyncio.run(main(*sys.argv[1:4]))))

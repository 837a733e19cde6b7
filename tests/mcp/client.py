"""The official MCP Python SDK (`mcp`, pinned by scripts/sdk-clients.sh) as a client of the
gateway's `/mcp`, for tests/mcp_gateway.rs.

Usage: client.py --url URL --key KEY --steps JSON. The steps run in order on one session; each
is a list: ["tools"] (every page of tools/list: names and page count), ["call", NAME, ARGS]
(tools/call: its texts and isError, or the JSON-RPC error), ["prompts"], ["prompt", NAME, ARGS],
["resources"], ["read", URI], ["sleep", SECONDS], ["progress", NAME, ARGS] (a call with a
progress callback: its texts and the progress it was told of), ["cancel", NAME, ARGS, SECONDS]
(a call abandoned after SECONDS, which the SDK cancels with `notifications/cancelled`). With
`--sse` it connects over the older HTTP+SSE transport (`sse_client`). Prints one JSON array of
the outcomes.
"""

import argparse
import asyncio
import json

import anyio
from mcp import Client
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError


def texts(result):
    return [block.text for block in result.content if getattr(block, "type", "") == "text"]


async def run(url, key, steps, sse):
    headers = {"Authorization": f"Bearer {key}"}
    if sse:
        transport = sse_client(url, headers=headers)
    else:
        transport = streamable_http_client(url, http_client=create_mcp_http_client(headers=headers))
    outcomes = []
    async with Client(transport) as client:
        for step in steps:
            try:
                outcomes.append(await one(client, step))
            except MCPError as e:
                outcomes.append({"error": {"code": e.error.code, "message": e.error.message}})
    return outcomes


async def one(client, step):
    kind = step[0]
    if kind == "tools":
        names, pages, cursor, meta = [], 0, None, None
        while True:
            page = await client.list_tools(cursor=cursor, cache_mode="refresh")
            pages += 1
            names += [tool.name for tool in page.tools]
            meta = meta or (page.meta or None)
            cursor = page.next_cursor
            if cursor is None:
                return {"names": names, "pages": pages, "meta": meta}
    if kind == "call":
        result = await client.call_tool(step[1], step[2])
        return {"texts": texts(result), "is_error": bool(result.is_error)}
    if kind == "prompts":
        page = await client.list_prompts()
        return {"names": [p.name for p in page.prompts]}
    if kind == "prompt":
        result = await client.get_prompt(step[1], step[2])
        return {"messages": [m.content.text for m in result.messages]}
    if kind == "resources":
        page = await client.list_resources()
        return {"uris": [str(r.uri) for r in page.resources]}
    if kind == "read":
        result = await client.read_resource(step[1])
        return {"contents": [{"uri": str(c.uri), "text": getattr(c, "text", None)} for c in result.contents]}
    if kind == "progress":
        seen = []

        async def told(progress, total, message):
            seen.append([progress, total, message])

        result = await client.call_tool(step[1], step[2], progress_callback=told)
        return {"texts": texts(result), "progress": seen}
    if kind == "cancel":
        with anyio.move_on_after(step[3]) as scope:
            await client.call_tool(step[1], step[2])
        return {"cancelled": scope.cancelled_caught}
    if kind == "sleep":
        await asyncio.sleep(step[1])
        return {}
    raise ValueError(f"unknown step {kind}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--key", required=True)
    parser.add_argument("--steps", required=True)
    parser.add_argument("--sse", action="store_true")
    args = parser.parse_args()
    print(json.dumps(asyncio.run(run(args.url, args.key, json.loads(args.steps), args.sse))))


main()

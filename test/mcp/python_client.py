"""An MCP client in another language: the Python `mcp` SDK drives `plan-ledger mcp` over stdio.

Run by test/mcp/python.e2e.test.ts with the ledger's PLAN_LEDGER_* environment; prints one JSON object
with what it saw: the tool names, the created plan, its final status and its verification.
"""
import asyncio
import json
import os
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


async def main() -> None:
    params = StdioServerParameters(command=os.environ.get("NODE", "node"), args=["bin/plan-ledger.js", "mcp", "--by", "python-agent"], env=dict(os.environ))
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            tools = await session.list_tools()
            created = await session.call_tool(
                "plan_create",
                {
                    "goal": "a plan from Python",
                    "mode": "execute",
                    "labels": {"via": "python"},
                    "items": [
                        {"id": "one", "title": "one", "why": "first", "tool": "noop", "input": {"lang": "python"}},
                        {"id": "two", "title": "two", "why": "after one", "tool": "noop", "input": {"n": 2}, "dependsOn": ["one"]},
                    ],
                },
            )
            plan_id = created.structured_content["planId"]
            waited = await session.call_tool("plan_wait", {"planId": plan_id, "timeoutMs": 60000})
            verified = await session.call_tool("plan_verify", {"planId": plan_id})
            print(
                json.dumps(
                    {
                        "tools": sorted(t.name for t in tools.tools),
                        "withOutputSchema": sorted(t.name for t in tools.tools if t.output_schema),
                        "planId": plan_id,
                        "status": waited.structured_content["status"],
                        "outputs": {i["id"]: i.get("output") for i in waited.structured_content["items"]},
                        "verified": verified.structured_content["ok"],
                    }
                )
            )


if __name__ == "__main__":
    asyncio.run(main())
    sys.exit(0)

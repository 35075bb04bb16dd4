#!/usr/bin/env python3
"""One BFCL v4 multi-turn task's executable backends as an MCP server, on the official Python
SDK's low-level server, over stdio or Streamable HTTP: its tools are the task's functions (their
BFCL docs as JSON Schema, as bench/bfcl_openai.py writes them), and each call runs on bfcl_eval's
own backends (`execute_multi_turn_func_call`: one instance per task, from its initial
configuration, kept for the life of the server).

    bfcl_mcp_server.py --task TASK.json --transport stdio
    bfcl_mcp_server.py --task TASK.json --transport http --port-file F

TASK.json is one task as bench/multi_turn.py's load_tasks prepares it (function, initial_config,
involved_classes, id). The port is written to the port file once the server listens.
"""
import argparse
import json
import logging
import os
import socket
import sys
from pathlib import Path

import anyio
import mcp_types as types
from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_utils import execute_multi_turn_func_call
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bfcl_openai import bfcl_tools  # noqa: E402

MODEL_NAME = "schemaweaver_agent"


def backend_server(task):
    tools = [types.Tool.model_validate({"name": t["function"]["name"], "description": t["function"].get("description", ""),
                                        "inputSchema": t["function"]["parameters"]})
             for t in bfcl_tools(task["function"])]
    long_context = "long_context" in task["id"]

    async def list_tools(ctx, params):
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx, params):
        arguments = params.arguments or {}
        call = f"{params.name}({','.join(f'{k}={v!r}' for k, v in arguments.items())})"
        results, _ = execute_multi_turn_func_call([call], task["initial_config"], task["involved_classes"],
                                                  MODEL_NAME, task["id"], long_context=long_context)
        return types.CallToolResult(content=[types.TextContent(type="text", text=str(results[0]))])

    return Server("bfcl-" + task["id"], on_list_tools=list_tools, on_call_tool=call_tool)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--task", required=True)
    parser.add_argument("--transport", choices=["stdio", "http"], default="stdio")
    parser.add_argument("--port-file")
    args = parser.parse_args()
    logging.getLogger("mcp").setLevel(logging.WARNING)
    server = backend_server(json.loads(Path(args.task).read_text()))
    if args.transport == "stdio":
        async def serve_stdio():
            async with stdio_server() as (read, write):
                await server.run(read, write, server.create_initialization_options())
        anyio.run(serve_stdio)
        return
    import uvicorn
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    http = uvicorn.Server(uvicorn.Config(server.streamable_http_app(), host="127.0.0.1", port=port, log_level="warning"))

    async def serve_http():
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(http.serve)
            while not http.started:
                await anyio.sleep(0.05)
            Path(args.port_file + ".tmp").write_text(str(port))
            os.replace(args.port_file + ".tmp", args.port_file)

    anyio.run(serve_http)


if __name__ == "__main__":
    main()

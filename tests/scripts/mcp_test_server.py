#!/usr/bin/env python3
"""MCP servers for the client's tests: a real one on the official Python SDK (stdio or
Streamable HTTP), and one that misbehaves on purpose.

    mcp_test_server.py --transport stdio
    mcp_test_server.py --transport http --port-file F [--json-response] [--stateless]
        [--tls-cert C --tls-key K]                    (https)
    mcp_test_server.py --fault KIND --port-file F     (HTTP; KIND below)
    mcp_test_server.py --fault exit                   (stdio: exits on the first tools/call)

The SDK's server offers an order desk: lookup_order (read-only, a structured result under an
outputSchema), cancel_order (destructive), refund_order (fails: isError) and unlock_tools, which
adds a tool (audit_log_N, its name the result) and says the list changed. The SDK speaks revision 2026-07-28 and the
initialize handshake of the earlier ones, as a client asks.

A faulty server answers the handshake of revision 2025-06-18 and lists one tool, ping_desk; then
its tools/call answers as KIND says: status500 (HTTP 500), garbage (a body that is not JSON-RPC),
drop (an event stream closed before the answer), hang (no answer at all), refuse (HTTP 503 to
everything, the handshake included). The port is written to the port file once it listens.
Over stdio, --fault exit answers the same handshake and exits when a tool is called.
"""
import argparse
import json
import logging
import socket
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from pydantic import BaseModel


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def write_port(path, port):
    with open(path + ".tmp", "w") as f:
        f.write(str(port))
    import os
    os.replace(path + ".tmp", path)


# ------------------------------------------------------------------ the SDK's server

class OrderStatus(BaseModel):
    order_id: str
    status: str
    items: int


def order_desk():
    from mcp.server.mcpserver import Context, MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp_types import ToolAnnotations

    desk = MCPServer("order-desk")

    @desk.tool(annotations=ToolAnnotations(readOnlyHint=True))
    def lookup_order(order_id: str) -> OrderStatus:
        """The status of an order."""
        return OrderStatus(order_id=order_id, status="shipped", items=3)

    @desk.tool(annotations=ToolAnnotations(readOnlyHint=False, destructiveHint=True))
    def cancel_order(order_id: str) -> str:
        """Cancel an order."""
        return f"order {order_id} cancelled"

    @desk.tool()
    def refund_order(order_id: str) -> str:
        """Refund an order."""
        raise ToolError(f"order {order_id} cannot be refunded: it has not arrived")

    @desk.tool()
    async def unlock_tools(ctx: Context) -> str:
        """Unlock another audit tool; its name is the result."""
        def audit_log(order_id: str) -> str:
            """Who touched an order."""
            return f"order {order_id}: created by alice"
        name = f"audit_log_{len(await desk.list_tools())}"
        desk.add_tool(audit_log, name=name)
        try:
            await ctx.session.send_tool_list_changed()
        except Exception:  # the stateless revision has no session: its list's ttlMs says when to look again
            pass
        return name

    return desk


# ------------------------------------------------------------------ a server that misbehaves

def faulty_handler(kind):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def reply(self, status, body=b"", content_type="application/json"):
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def answer(self, message, result):
            self.reply(200, json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}).encode())

        def do_DELETE(self):
            self.reply(405)

        def do_POST(self):
            message = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
            method = message.get("method", "")
            if kind == "refuse":
                return self.reply(503, b"service unavailable")
            if "id" not in message:
                return self.reply(202)
            if method == "initialize":
                return self.answer(message, {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                                             "serverInfo": {"name": "faulty-" + kind, "version": "1"}})
            if method == "tools/list":
                return self.answer(message, {"tools": [{"name": "ping_desk", "description": "Ping the desk.",
                                                        "inputSchema": {"type": "object", "properties": {}}}]})
            if method != "tools/call":
                error = {"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32601, "message": "unknown method"}}
                return self.reply(404, json.dumps(error).encode())
            if kind == "status500":
                return self.reply(500, b"internal error: the desk fell over")
            if kind == "garbage":
                return self.reply(200, b"<html>not json-rpc</html>")
            if kind == "drop":
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Connection", "close")
                self.end_headers()
                self.wfile.write(b": the answer never comes\n\n")
                self.wfile.flush()
                self.close_connection = True
                return
            if kind == "hang":
                time.sleep(600)

    return Handler


def exit_on_call():
    """A stdio server that answers the handshake and its list, then exits mid-call."""
    for line in sys.stdin:
        message = json.loads(line)
        method = message.get("method", "")
        if "id" not in message:
            continue
        if method == "tools/call":
            sys.exit(3)
        if method == "initialize":
            result = {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                      "serverInfo": {"name": "faulty-exit", "version": "1"}}
        elif method == "tools/list":
            result = {"tools": [{"name": "ping_desk", "inputSchema": {"type": "object", "properties": {}}}]}
        else:
            print(json.dumps({"jsonrpc": "2.0", "id": message["id"],
                              "error": {"code": -32601, "message": "unknown method"}}), flush=True)
            continue
        print(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}), flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--transport", choices=["stdio", "http"], default="stdio")
    parser.add_argument("--port-file")
    parser.add_argument("--json-response", action="store_true")
    parser.add_argument("--stateless", action="store_true")
    parser.add_argument("--fault", choices=["status500", "garbage", "drop", "hang", "refuse", "exit"])
    parser.add_argument("--tls-cert")
    parser.add_argument("--tls-key")
    args = parser.parse_args()
    if args.fault == "exit":
        return exit_on_call()
    if args.fault:
        server = ThreadingHTTPServer(("127.0.0.1", 0), faulty_handler(args.fault))
        server.daemon_threads = True
        write_port(args.port_file, server.server_address[1])
        server.serve_forever()
        return
    logging.getLogger("mcp").setLevel(logging.WARNING)  # the SDK's line per session and per failed tool
    desk = order_desk()
    if args.transport == "stdio":
        desk.run("stdio")
        return
    import anyio
    import uvicorn

    port = free_port()
    app = desk.streamable_http_app(json_response=args.json_response, stateless_http=args.stateless)
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning",
                                           ssl_certfile=args.tls_cert, ssl_keyfile=args.tls_key))

    async def serve():
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(server.serve)
            while not server.started:
                await anyio.sleep(0.05)
            write_port(args.port_file, port)

    anyio.run(serve)


if __name__ == "__main__":
    sys.exit(main())

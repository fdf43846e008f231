"""MCP tools as ordinary tools of the loop (docs/mcp.md).

Each tool of a session's MCP servers becomes a `Tool` the model calls as `mcp__<server>__<tool>`
and the loop records as the code node `mcp:<server>/<tool>` (input = the arguments, output = the
result; aged and spilled like any tool output). Every call asks permission `mcp` with detail
`{tool: "mcp:<server>/<tool>", server, name, arguments}` — the server's own hints (readOnlyHint …)
are not trusted to skip it; the policies decide per server and per tool (runtime/permissions.py,
an ACP client's "always allow").

The result: the text of the result's text blocks when that is all there is (what a model reads
best; the spec has servers mirror structuredContent there), else `{content: [...],
structuredContent}` as the server sent it. `isError` makes the call an error node with the
server's text."""

from __future__ import annotations

from typing import Any

from ..core.mcp_config import function_name, node_name
from .mcp_servers import McpServers, McpTool
from .tools import Tool, ToolContext


class McpToolError(RuntimeError):
    """The server answered the call with isError: its text is the error."""


def result_output(res: Any) -> Any:
    blocks = [b.model_dump(mode="json", by_alias=True, exclude_none=True) for b in (res.content or [])]
    texts = [b.get("text", "") for b in blocks if b.get("type") == "text"]
    if res.is_error:
        raise McpToolError("\n".join(texts) or "the MCP tool reported an error")
    if blocks and len(texts) == len(blocks):   # structuredContent is mirrored in the text (MCP spec)
        return "\n".join(texts)
    out: dict[str, Any] = {"content": blocks}
    if res.structured_content is not None:
        out["structuredContent"] = res.structured_content
    return out


def _schema(t: McpTool) -> dict[str, Any]:
    schema = dict(t.input_schema) if isinstance(t.input_schema, dict) else {}
    schema.setdefault("type", "object")
    schema.setdefault("properties", {})
    return schema


def mcp_tool(servers: McpServers, t: McpTool) -> Tool:
    recorded = node_name(t.server, t.name)

    def call(ctx: ToolContext, **arguments: object) -> Any:
        ctx.runtime.require_permission("mcp", {"tool": recorded, "server": t.server, "name": t.name,
                                               "arguments": arguments})
        return result_output(servers.call(t.server, t.name, arguments))

    desc = f"[MCP server {t.server}] {t.description}".strip()
    tool = Tool(function_name(t.server, t.name), desc[:4000], _schema(t), call, "mcp")
    tool.node_name = recorded
    return tool


def mcp_tools(servers: McpServers | None) -> tuple[Tool, ...]:
    """The Tools of every live server of `servers`, in configuration order (stable prompts)."""
    if servers is None:
        return ()
    return tuple(mcp_tool(servers, t) for t in servers.tools())

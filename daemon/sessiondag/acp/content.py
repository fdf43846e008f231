"""ACP content blocks <-> what the daemon stores.

A prompt's blocks become one daemon content: text blocks joined by blank lines, a resource link as
a line `[resource: name <uri>]`, an embedded text resource as its text fenced with its URI, and
images / embedded blobs as attachments (base64 as received); an audio block is refused (-32602:
the agent advertises audio: false). Stored user outputs come back as text
blocks (attachment parts as `[attachment: name]`). ACP MCP server lists become the daemon's
`mcp_servers` mapping."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from acp.schema import (AcpMcpServer, AudioContentBlock, EmbeddedResourceContentBlock, HttpMcpServer,
                        ImageContentBlock, McpServerStdio, ResourceContentBlock, SseMcpServer, TextContentBlock)

from .errors import invalid

if TYPE_CHECKING:
    from typing import TypeAlias

    from sessiondag_client.wire import protocol as wp

    # the daemon's agent/prompt `content`: a string, or {text, attachments}
    DaemonContent: TypeAlias = str | wp.AgentPromptParamsContent1

# what session/prompt carries (the SDK's Agent.prompt), and the MCP servers session/new … name
PromptBlock = TextContentBlock | ImageContentBlock | AudioContentBlock | ResourceContentBlock | \
    EmbeddedResourceContentBlock
McpServerConfig = HttpMcpServer | SseMcpServer | AcpMcpServer | McpServerStdio


def _get(block: object, key: str, default: object = None) -> Any:
    if isinstance(block, dict):
        return block.get(key, default)
    return getattr(block, key, default)


def prompt_to_content(blocks: Sequence[PromptBlock | Mapping[str, object]]) -> DaemonContent:
    """The daemon's `content` for a prompt: a string, or {text, attachments}."""
    texts: list[str] = []
    atts: list[wp.AgentPromptParamsContent1AttachmentsItem] = []
    for n, b in enumerate(blocks):
        kind = _get(b, "type")
        if kind == "text":
            texts.append(_get(b, "text") or "")
        elif kind == "resource_link":
            texts.append(f"[resource: {_get(b, 'name') or ''} <{_get(b, 'uri')}>]")
        elif kind == "resource":
            res = _get(b, "resource")
            uri = _get(res, "uri") or ""
            if _get(res, "text") is not None:
                texts.append(f"<resource uri=\"{uri}\">\n{_get(res, 'text')}\n</resource>")
            else:
                atts.append({"data": _get(res, "blob") or "", "media_type": _get(res, "mime_type") or
                             "application/octet-stream", "name": uri.rsplit("/", 1)[-1] or f"resource-{n}"})
        elif kind == "audio":   # promptCapabilities.audio is false: never silently dropped or stored
            raise invalid("audio content is not supported by this agent (promptCapabilities.audio is false)",
                          field="prompt", index=n)
        elif kind == "image":
            atts.append({"data": _get(b, "data") or "", "media_type": _get(b, "mime_type") or
                         f"{kind}/octet-stream", "name": (_get(b, "uri") or f"{kind}-{n}").rsplit("/", 1)[-1]})
    text = "\n\n".join(texts)
    return {"text": text, "attachments": atts} if atts else text


def output_text(output: object) -> str:
    """A stored node output as plain text (user nodes may hold [text part, attachment parts…])."""
    if output is None:
        return ""
    if isinstance(output, str):
        return output
    if isinstance(output, list):
        parts = []
        for p in output:
            if isinstance(p, dict) and p.get("type") == "text":
                parts.append(str(p.get("text", "")))
            elif isinstance(p, dict):
                parts.append(f"[attachment: {p.get('name') or p.get('media_type') or 'file'}]")
        return "\n".join(parts)
    if isinstance(output, dict) and isinstance(output.get("text"), str):
        return str(output["text"])
    import json
    return json.dumps(output, ensure_ascii=False)


def mcp_config(servers: Sequence[McpServerConfig] | None) -> dict[str, dict[str, object]]:
    """ACP's `mcpServers` (stdio {name, command, args, env: [{name, value}]}, http / sse {type, name,
    url, headers: [{name, value}]}) as the daemon's `mcp_servers` (the `mcpServers` mapping); a server
    on another transport (ACP's own, which initialize does not offer) is refused by name."""
    out: dict[str, dict[str, object]] = {}
    for s in servers or ():
        kind = _get(s, "type") or "stdio"
        if kind not in ("stdio", "http", "sse"):   # e.g. "acp": a transport initialize did not offer
            raise invalid(f"MCP server {str(_get(s, 'name'))!r} uses the {str(kind)!r} transport; this agent "
                          "connects to stdio, http and sse servers (its mcpCapabilities)", field="mcpServers")
        given = _get(s, "env" if kind == "stdio" else "headers") or ()
        pairs = {str(_get(p, "name")): str(_get(p, "value")) for p in given}
        if kind == "stdio":
            entry: dict[str, object] = {"command": _get(s, "command"), "args": list(_get(s, "args") or ())}
            if pairs:
                entry["env"] = pairs
        else:
            entry = {"type": kind, "url": _get(s, "url")}
            if pairs:
                entry["headers"] = pairs
        out[str(_get(s, "name"))] = entry
    return out

"""ACP content blocks <-> what the daemon stores.

A prompt's blocks become one daemon content: text blocks joined by blank lines, a resource link as
a line `[resource: name <uri>]`, an embedded text resource as its text fenced with its URI, and
images / embedded blobs as attachments (base64 as received); an audio block is refused (-32602:
the agent advertises audio: false). Stored user outputs come back as text
blocks (attachment parts as `[attachment: name]`). ACP MCP server lists become the daemon's
`mcp_servers` mapping."""

from __future__ import annotations

from typing import Any

from acp import text_block

from .errors import invalid


def _get(block: Any, key: str, default: Any = None) -> Any:
    if isinstance(block, dict):
        return block.get(key, default)
    return getattr(block, key, default)


def prompt_to_content(blocks: list[Any]) -> Any:
    """The daemon's `content` for a prompt: a string, or {text, attachments}."""
    texts: list[str] = []
    atts: list[dict[str, str]] = []
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


def output_text(output: Any) -> str:
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


def text_blocks(output: Any) -> list[Any]:
    t = output_text(output)
    return [text_block(t)] if t else []


def mcp_config(servers: list[Any] | None) -> dict[str, Any]:
    """ACP's `mcpServers` (stdio {name, command, args, env: [{name, value}]}, http / sse {type, name,
    url, headers: [{name, value}]}) as the daemon's `mcp_servers` (the `mcpServers` mapping)."""
    out: dict[str, Any] = {}
    for s in servers or ():
        kind = _get(s, "type") or "stdio"
        given = _get(s, "env" if kind == "stdio" else "headers") or ()
        pairs = {str(_get(p, "name")): str(_get(p, "value")) for p in given}
        if kind == "stdio":
            entry: dict[str, Any] = {"command": _get(s, "command"), "args": list(_get(s, "args") or ())}
            if pairs:
                entry["env"] = pairs
        else:
            entry = {"type": kind, "url": _get(s, "url")}
            if pairs:
                entry["headers"] = pairs
        out[str(_get(s, "name"))] = entry
    return out

"""The one system-prompt assembler, and recording the prompt in the graph when it changes.

`build_system_prompt` is the single place a system prompt is made — for chat turns and function
bodies alike — so the text (and the provider's cached prefix) stays identical across calls. A call
site that wants a slim prompt passes fewer parts explicitly (e.g. `tools=()`), accepting the miss.

`record_system_prompt` appends a `code` node "context/system_prompt" (caller ROOT, predecessor =
the current head, output = the full text, metadata.sha256) whenever the text differs from the latest
one on the head's chain. Rendering pins that latest node as the wire system message.
"""

from __future__ import annotations

import hashlib
from typing import Iterable, NotRequired, TypedDict

from ..core.errors import InvalidNodeError
from ..core.model import ROOT, Call
from ..store.session import Session
from .cache import cache_for
from .content import canonical_json
from .graphinfo import SYSTEM_PROMPT_NAME


class ToolSpec(TypedDict):
    """A tool as the prompt lists it (an OpenAI function spec's `function`)."""

    name: str
    description: NotRequired[str | None]
    parameters: NotRequired[object]   # its JSON schema, shown as it is


class SkillSpec(TypedDict):
    name: str
    description: NotRequired[str | None]


def _section(title: str, body: str) -> str:
    return f"# {title}\n\n{body.strip()}"


def build_system_prompt(*, identity: str, memory: str | None = None, tools: Iterable[ToolSpec] = (),
                        skills: Iterable[str | SkillSpec] = (), mode: str | None = None, slim: bool = False) -> str:
    """identity + project memory + unified tool list + skills (+ mode), in that fixed order.

    tools: [{name, description, parameters}] (listed sorted by name); skills: strings or
    {name, description} dicts, kept in the given order. `slim=True` is the explicit call-site
    opt-out: identity (and mode) only — a different prefix, so it misses the provider's cache."""
    if not isinstance(identity, str) or not identity.strip():
        raise InvalidNodeError("the system prompt needs an identity")
    out = [identity.strip()]
    if slim:
        memory, tools, skills = None, (), ()
    if memory and memory.strip():
        out.append(_section("Project memory", memory))
    tool_list = list(tools)
    if tool_list:
        lines = []
        for t in sorted(tool_list, key=lambda t: t.get("name", "")):
            if not isinstance(t, dict) or not isinstance(t.get("name"), str):
                raise InvalidNodeError("a tool is {name, description, parameters}")
            lines.append(f"## {t['name']}\n{(t.get('description') or '').strip()}\n"
                         f"Parameters: {canonical_json(t.get('parameters') or {})}")
        out.append(_section("Tools", "\n\n".join(lines)))
    skill_list = list(skills)
    if skill_list:
        lines = []
        for s in skill_list:
            if isinstance(s, str):
                lines.append(f"- {s.strip()}")
            elif isinstance(s, dict) and isinstance(s.get("name"), str):
                lines.append(f"- {s['name']}: {(s.get('description') or '').strip()}")
            else:
                raise InvalidNodeError("a skill is a string or {name, description}")
        out.append(_section("Skills", "\n".join(lines)))
    if mode:
        out.append(_section("Mode", mode))
    return "\n\n".join(out) + "\n"


def prompt_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def latest_system_prompt(session: Session, head_id: str | None = None) -> Call | None:
    """The latest context/system_prompt node on the chain ending at `head_id` (default HEAD)."""
    cache = cache_for(session)
    with session.lock, cache.lock:
        spine = cache.walk(cache.graph.head_id if head_id is None else head_id)
        return spine[cache.prompt_pos[-1]] if cache.prompt_pos else None


def record_system_prompt(session: Session, text: str) -> Call | None:
    """Append a context/system_prompt node if `text` differs from the chain's latest; else None."""
    if not isinstance(text, str) or not text:
        raise InvalidNodeError("a system prompt is a non-empty string")
    h = prompt_hash(text)
    prev = latest_system_prompt(session)
    if prev is not None and prev.metadata.get("sha256") == h:
        return None
    head = session.head_id
    return session.append(Call("code", SYSTEM_PROMPT_NAME, output=text, caller=ROOT,
                               predecessor=head, metadata={"sha256": h}), expected_head=head)

"""What one llm node records of its cost, and how it is read back.

A model call records in its node's metadata (runtime/calls.py), besides `provider` and the
requested / answered model (`gen_ai.request.model`, `gen_ai.response.model`):

    gen_ai.usage.input_tokens         every input token, cached ones included
    gen_ai.usage.output_tokens        every output token, reasoning ones included
    gen_ai.usage.cached_input_tokens  input tokens read from the provider's prompt cache (when reported)
    gen_ai.usage.reasoning_tokens     output tokens spent reasoning (when reported)
    sessiondag.latency_ms             wall time of the provider call
    sessiondag.cost                   {"usd", "pusd", "price", "rates"} or "unknown" (no price for the model)
    sessiondag.tools                  the names of the tool specs sent with the request

Metadata is read as hostile (a node from disk or another process): anything that is not a
non-negative integer counts as absent. Pure; no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from .model import MODEL_KEY, USAGE_INPUT, USAGE_OUTPUT, Call
from .prices import Price, lookup, usd

USAGE_CACHED = "gen_ai.usage.cached_input_tokens"
USAGE_REASONING = "gen_ai.usage.reasoning_tokens"
RESPONSE_MODEL = "gen_ai.response.model"
LATENCY_KEY = "sessiondag.latency_ms"
COST_KEY = "sessiondag.cost"
TOOLS_KEY = "sessiondag.tools"     # the names of the tool specs the request carried (a replay sends them again)
UNKNOWN = "unknown"


def cost_record(table: Mapping[str, Price], provider: str, model: str | None, response_model: str | None,
                input_tokens: int, output_tokens: int, cached_tokens: int | None) -> str | dict[str, object]:
    """The `sessiondag.cost` value of a finished call: priced by the requested model's entry, else
    the answered model's; "unknown" when neither has one."""
    hit = lookup(table, provider, model, response_model)
    if hit is None:
        return UNKNOWN
    key, price = hit
    pusd = price.cost_pusd(input_tokens, output_tokens, cached_tokens or 0)
    return {"usd": usd(pusd), "pusd": pusd, "price": key, "rates": price.to_dict()}


def _count(v: object) -> int:
    return v if isinstance(v, int) and not isinstance(v, bool) and v >= 0 else 0


@dataclass(frozen=True, slots=True)
class NodeUsage:
    """One llm node's recorded usage (zeros and None where it recorded nothing)."""

    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    reasoning_tokens: int = 0
    latency_ms: float = 0.0
    cost_pusd: int | None = None      # None: unpriced (cost "unknown", or nothing recorded)
    provider: str = ""
    model: str = ""

    @property
    def model_key(self) -> str:
        return f"{self.provider or '?'}/{self.model or '?'}"


def node_usage(c: Call) -> NodeUsage:
    """The usage an llm node recorded (a node of another role: all zeros)."""
    if c.role != "llm":
        return NodeUsage()
    md = c.metadata
    cost = md.get(COST_KEY)
    pusd = cost.get("pusd") if isinstance(cost, dict) else None
    i, o = _count(md.get(USAGE_INPUT)), _count(md.get(USAGE_OUTPUT))
    if cost is None and i == o == 0:
        pusd = 0  # no cost recorded and nothing consumed (a call that failed before any usage)
    lat = md.get(LATENCY_KEY)
    provider = md.get("provider")
    model = md.get(MODEL_KEY)
    return NodeUsage(
        i, o, _count(md.get(USAGE_CACHED)),
        _count(md.get(USAGE_REASONING)),
        float(lat) if isinstance(lat, (int, float)) and not isinstance(lat, bool) and lat >= 0 else 0.0,
        pusd if isinstance(pusd, int) and not isinstance(pusd, bool) and pusd >= 0 else None,
        provider if isinstance(provider, str) else "", model if isinstance(model, str) else c.name)

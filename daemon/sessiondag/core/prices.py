"""The price table: what a model call costs, in US dollars per million tokens.

Keys are "provider/model" (the provider kind as the llm node records it, `openai` for any
OpenAI-compatible endpoint, and the model as requested or as the server answered it). A price has
`input_per_mtok` and `output_per_mtok` (required) and `cached_input_per_mtok` (the rate of the
input tokens served from the provider's prompt cache; default: the input rate). Reasoning tokens
are billed as output (both providers count them in the output tokens). The shipped defaults are
the public list prices of common models as of `PRICES_AS_OF`; the settings' `[prices."p/m"]`
tables override or add entries (core/settings.py). A model with no entry has no price: its cost
is "unknown", never an estimate.

Costs are exact integers in picodollars (1e-12 USD) so that sums do not depend on their order;
the wire shows dollars.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Mapping

from .errors import ConfigError

PRICES_AS_OF = "2025-11"
PICO = 10 ** 12
FIELDS = ("input_per_mtok", "output_per_mtok", "cached_input_per_mtok")


@dataclass(frozen=True, slots=True)
class Price:
    input_per_mtok: float
    output_per_mtok: float
    cached_input_per_mtok: float | None = None

    def to_dict(self) -> dict[str, float]:
        out = {"input_per_mtok": self.input_per_mtok, "output_per_mtok": self.output_per_mtok}
        if self.cached_input_per_mtok is not None:
            out["cached_input_per_mtok"] = self.cached_input_per_mtok
        return out

    def cost_pusd(self, input_tokens: int, output_tokens: int, cached_tokens: int = 0) -> int:
        """The cost in picodollars; `cached_tokens` are part of `input_tokens`."""
        cached = min(max(cached_tokens, 0), input_tokens)
        cached_rate = self.cached_input_per_mtok if self.cached_input_per_mtok is not None else self.input_per_mtok
        # a rate per Mtok in dollars is rate * 1e6 picodollars per token
        return ((input_tokens - cached) * _per_token(self.input_per_mtok) + cached * _per_token(cached_rate)
                + output_tokens * _per_token(self.output_per_mtok))


def _per_token(rate_per_mtok: float) -> int:
    return round(rate_per_mtok * 10 ** 6)


def usd(pusd: int) -> float:
    return pusd / PICO


def _p(i: float, o: float, c: float | None = None) -> Price:
    return Price(i, o, c)


DEFAULT_PRICES: Mapping[str, Price] = MappingProxyType({
    "openai/gpt-4o": _p(2.50, 10.00, 1.25),
    "openai/gpt-4o-mini": _p(0.15, 0.60, 0.075),
    "openai/gpt-4.1": _p(2.00, 8.00, 0.50),
    "openai/gpt-4.1-mini": _p(0.40, 1.60, 0.10),
    "openai/gpt-4.1-nano": _p(0.10, 0.40, 0.025),
    "openai/o3": _p(2.00, 8.00, 0.50),
    "openai/o4-mini": _p(1.10, 4.40, 0.275),
    "openai/gpt-5": _p(1.25, 10.00, 0.125),
    "openai/gpt-5-mini": _p(0.25, 2.00, 0.025),
    "openai/gpt-5-nano": _p(0.05, 0.40, 0.005),
    "anthropic/claude-opus-4-1": _p(15.00, 75.00, 1.50),
    "anthropic/claude-sonnet-4-5": _p(3.00, 15.00, 0.30),
    "anthropic/claude-sonnet-4": _p(3.00, 15.00, 0.30),
    "anthropic/claude-haiku-4-5": _p(1.00, 5.00, 0.10),
    "anthropic/claude-3-5-haiku": _p(0.80, 4.00, 0.08),
})


def parse_prices(value: object, label: str) -> Mapping[str, Price]:
    """The `[prices."provider/model"]` tables of a config file (strict: a bad entry names itself)."""
    if not isinstance(value, dict):
        raise ConfigError(label, repr(value)[:80], 'tables [prices."provider/model"]')
    out: dict[str, Price] = {}
    for key, body in value.items():
        where = f'{label}."{key}"'
        if not isinstance(key, str) or key.count("/") < 1 or key.startswith("/") or key.endswith("/"):
            raise ConfigError(where, "", 'a key "provider/model"')
        if not isinstance(body, dict) or set(body) - set(FIELDS) or not {"input_per_mtok", "output_per_mtok"} <= set(body):
            raise ConfigError(where, repr(body)[:80], f"a table of {', '.join(FIELDS)} (the first two required)")
        rates = {}
        for f, v in body.items():
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v < 1e6:
                raise ConfigError(f"{where}.{f}", repr(v)[:80], "a number of dollars per million tokens, >= 0")
            rates[f] = float(v)
        out[key] = Price(rates["input_per_mtok"], rates["output_per_mtok"], rates.get("cached_input_per_mtok"))
    return MappingProxyType(out)


def price_table(overrides: Mapping[str, Price] | None) -> Mapping[str, Price]:
    """The shipped defaults with the settings' entries on top."""
    if not overrides:
        return DEFAULT_PRICES
    return MappingProxyType({**DEFAULT_PRICES, **overrides})


def lookup(table: Mapping[str, Price], provider: str, *models: str | None) -> tuple[str, Price] | None:
    """The first of "provider/model" for `models` (e.g. the requested one, then the answered one)
    that has a price, as (key, price); None when none has."""
    for m in models:
        if m:
            key = f"{provider}/{m}"
            p = table.get(key)
            if p is not None:
                return key, p
    return None

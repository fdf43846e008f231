"""Budgets: limits on what a run and a session may spend, checked before every model call.

A `Budget` has run limits (`usd`, `tokens`: what this Runtime's calls spent — a prompt, its
sub-agents and their follow-up turns, which share the Runtime) and session limits (`session_usd`,
`session_tokens`: the session's ledger total, context/ledger.py). Before a call the projected
spend is checked: what was spent plus this request's input (its JSON length / 4 tokens, at the
model's input rate). Over a limit, the call is not made: model_call records an `error` llm node
whose `metadata.error.code` is `budget_exceeded` and the turn ends there (committed like any
error). A dollar limit cannot be checked against a model that has no price (or a spend that holds
unpriced calls): that is refused too, with reason "unpriced" — never a guess.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, fields, replace
from typing import TYPE_CHECKING, Any, Mapping, Protocol

import orjson

from ..context.encoded_messages import EncodedMessages
from ..context.ledger import ledger_for
from ..core.errors import SessionDagError
from ..core.prices import PICO, Price, lookup, usd
from ..core.usage import node_usage
from .providers.base import Provider

if TYPE_CHECKING:
    from ..core.model import Call
    from ..core.settings import Settings
    from .writer import SessionWriter


@dataclass(frozen=True)
class Budget:
    usd: float | None = None
    tokens: int | None = None
    session_usd: float | None = None
    session_tokens: int | None = None

    @classmethod
    def from_settings(cls, settings: Settings) -> "Budget":
        return cls(settings.budget_usd, settings.budget_tokens, settings.session_budget_usd,
                   settings.session_budget_tokens)

    def over(self, limits: Mapping[str, Any] | None) -> "Budget":
        """These limits with `limits`' set ones on top ({usd, tokens, session_usd, session_tokens})."""
        if not limits:
            return self
        return replace(self, **{f.name: limits[f.name] for f in fields(self) if limits.get(f.name) is not None})

    @property
    def active(self) -> bool:
        return any(getattr(self, f.name) is not None for f in fields(self))

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


class BudgetExceededError(SessionDagError):
    code = "budget_exceeded"

    def __init__(self, scope: str, unit: str, limit: float, spent: float, projected: float | None,
                 reason: str = "exceeded"):
        what = f"${limit:g}" if unit == "usd" else f"{limit} tokens"
        why = ("it cannot be checked: the model or a past call has no price (add one under [prices])"
               if reason == "unpriced" else f"spent {spent:g}, this call would make it {projected:g}")
        super().__init__(f"the {scope} budget of {what} stops this model call: {why}")
        self.scope, self.unit, self.limit, self.spent, self.projected, self.reason = (
            scope, unit, limit, spent, projected, reason)

    def data(self) -> dict[str, object]:
        return {"budget": {"scope": self.scope, "unit": self.unit, "limit": self.limit, "spent": self.spent,
                           "projected": self.projected, "reason": self.reason}}


class Spend:
    """What one Runtime's calls spent (thread-safe: sub-agent threads share it)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.tokens = self.pusd = self.unpriced = self.calls = 0

    def add(self, node: Call) -> None:
        u = node_usage(node)
        with self._lock:
            self.calls += 1
            self.tokens += u.input_tokens + u.output_tokens
            if u.cost_pusd is None:
                self.unpriced += 1
            else:
                self.pusd += u.cost_pusd

    def snapshot(self) -> tuple[int, int, int]:
        with self._lock:
            return self.tokens, self.pusd, self.unpriced


def estimate_tokens(messages: object) -> int:
    """About a token per 4 bytes of the messages' JSON (a list of dicts or EncodedMessages)."""
    if isinstance(messages, EncodedMessages):
        return messages.size() // 4 + 1
    return len(orjson.dumps(messages, default=str)) // 4 + 1


class Priced(Protocol):
    """What check_budget reads of the Runtime besides its `budget` and `spend` (read with getattr:
    a Runtime-like object without them has no run limits): the provider, for its price."""
    @property
    def provider(self) -> Provider: ...


def check_budget(w: SessionWriter, rt: Priced, messages: object, prices: Mapping[str, Price],
                 settings: Settings) -> None:
    """Raise BudgetExceededError if the call about to be made would go over a limit: the settings'
    defaults with the Runtime's own (`rt.budget`, a Budget or None) on top."""
    own: Budget | None = getattr(rt, "budget", None)
    b = Budget.from_settings(settings).over(own.to_dict() if own is not None else None)
    if not b.active:
        return
    est = estimate_tokens(messages)
    hit = lookup(prices, rt.provider.name, rt.provider.model)
    est_pusd = hit[1].cost_pusd(est, 0) if hit is not None else None
    spend = getattr(rt, "spend", None)
    run = spend.snapshot() if spend is not None else (0, 0, 0)
    _check("run", b.tokens, b.usd, run, est, est_pusd)
    if b.session_tokens is not None or b.session_usd is not None:
        with w.lock:
            t = ledger_for(w.session).totals()
        _check("session", b.session_tokens, b.session_usd,
               (t.input_tokens + t.output_tokens, t.cost_pusd, t.unpriced_calls), est, est_pusd)


def _check(scope: str, tokens: int | None, dollars: float | None, spent: tuple[int, int, int], est: int,
           est_pusd: int | None) -> None:
    used_tokens, used_pusd, unpriced = spent
    if tokens is not None and used_tokens + est > tokens:
        raise BudgetExceededError(scope, "tokens", tokens, used_tokens, used_tokens + est)
    if dollars is None:
        return
    if est_pusd is None or unpriced:
        raise BudgetExceededError(scope, "usd", dollars, usd(used_pusd), None, reason="unpriced")
    if used_pusd + est_pusd > round(dollars * PICO):
        raise BudgetExceededError(scope, "usd", dollars, usd(used_pusd), usd(used_pusd + est_pusd))


def record_spend(rt: object, node: Call) -> None:
    """Count a finished call in its Runtime's run spend."""
    spend = getattr(rt, "spend", None)
    if spend is not None:
        spend.add(node)

"""What a report masks: well-known credential shapes always, and the patterns `--redact` adds.

Provider keys are never stored in a session (docs/security.md); a tool output may still carry one
that the agent printed. Every string that enters a report document passes through `Redactor.text`.
"""

from __future__ import annotations

import re

MASK = "[redacted]"

# Credential shapes masked in every report (whatever --redact says): OpenAI / Anthropic style keys,
# GitHub tokens, AWS access key ids, bearer headers, private key blocks.
BUILTIN = (
    r"sk-(?:ant-)?[A-Za-z0-9_\-]{16,}",
    r"gh[pousr]_[A-Za-z0-9]{20,}",
    r"AKIA[0-9A-Z]{16}",
    r"(?i:bearer)\s+[A-Za-z0-9._\-]{16,}",
    r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----",
)


class BadPatternError(ValueError):
    """A --redact pattern that is not a valid regular expression."""


class Redactor:
    def __init__(self, patterns: list[str] | tuple[str, ...] = ()):
        for p in patterns:
            if not p:
                raise BadPatternError("an empty --redact pattern would mask everything")
            try:
                re.compile(p)
            except re.error as e:
                raise BadPatternError(f"--redact {p!r} is not a regular expression: {e}") from None
        self.patterns = list(patterns)
        self.rx = re.compile("|".join(f"(?:{p})" for p in (*BUILTIN, *patterns)))
        self.hits = 0

    def text(self, s: str) -> str:
        out, n = self.rx.subn(MASK, s)
        self.hits += n
        return out

    def value(self, v: object) -> object:
        """`v` with every string in it (keys too) masked."""
        if isinstance(v, str):
            return self.text(v)
        if isinstance(v, list):
            return [self.value(x) for x in v]
        if isinstance(v, dict):
            return {self.text(str(k)): self.value(x) for k, x in v.items()}
        return v

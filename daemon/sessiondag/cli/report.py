"""The report options shared by `sessions export --format html`, `run --report` and `view`
(docs/report.md): what gets masked and how much of each body goes in."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from .common import UsageError

if TYPE_CHECKING:
    from ..report import Limits


def add_report_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--redact", action="append", default=[], metavar="PATTERN",
                   help="mask text matching this regular expression in the report (repeatable; "
                        "well-known key shapes are always masked)")
    p.add_argument("--max-body-kb", type=int, default=64, metavar="KB",
                   help="each message, tool input or output up to this many KiB in the report (default 64)")


def report_limits(args: argparse.Namespace) -> Limits | None:
    from ..report import BadPatternError, Limits, Redactor
    if getattr(args, "format", "html") != "html" and not getattr(args, "report", None):
        if args.redact:
            raise UsageError("--redact applies to --format html only")
        return None
    if args.max_body_kb < 1:
        raise UsageError("--max-body-kb must be at least 1")
    try:
        red = Redactor(args.redact)
    except BadPatternError as e:
        raise UsageError(str(e)) from None
    return Limits(max_field_bytes=args.max_body_kb * 1024, redactor=red)

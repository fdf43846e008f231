"""`sessiondag run "TASK"`: one agent turn, headless and in-process (no daemon needed).

    sessiondag run "TASK" [--session ID] [--workdir DIR] [--provider scripted|openai]
                          [--script FILE] [--model NAME] [--json] [--allow write,run]
                          [--answers FILE] [--branch-from NODE]

Runs through session_context + the shared agent loop, streams progress to stderr, waits for the
sub-agents the turn spawned (and their follow-up turns), and prints the answer and
`session: <id> (pass --session <id> to continue)`. With --json, stdout is one JSON object
{session_id, head_id, stop_reason, usage, text, error} and the session line goes to stderr.

Exit codes: 0 done · 1 agent error (the error turn is committed) · 2 usage error · 3 resume refused.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from typing import Any

import orjson

EXIT_OK, EXIT_AGENT_ERROR, EXIT_USAGE, EXIT_RESUME_REFUSED = 0, 1, 2, 3
PERMISSIONS = ("write", "run")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # argparse exits 2 itself; keep it but never raise SystemExit(other)
        self.print_usage(sys.stderr)
        print(f"sessiondag run: {message}", file=sys.stderr)
        raise SystemExit(EXIT_USAGE)


def parser() -> argparse.ArgumentParser:
    p = _Parser(prog="sessiondag run", description="Run an agent task headless, in-process.")
    p.add_argument("task", help="the task (the user message)")
    p.add_argument("--session", help="continue this session (created under this id if missing)")
    p.add_argument("--workdir", default=None, help="working dir (default: the current directory)")
    p.add_argument("--provider", choices=("scripted", "openai"), default=None,
                   help="model provider (default: $SESSIONDAG_PROVIDER or scripted)")
    p.add_argument("--script", help="script file (JSON or YAML) for the scripted provider")
    p.add_argument("--model", help="model name (default: $SESSIONDAG_MODEL)")
    p.add_argument("--json", action="store_true", help="print one machine-readable result on stdout")
    p.add_argument("--allow", default="", help="permissions to grant: write,run (default: none)")
    p.add_argument("--answers", help="answers file for ask_user in non-interactive runs (JSON/YAML)")
    p.add_argument("--branch-from", help="fork the turn from this node (retry / edit)")
    p.add_argument("--max-steps", type=int, default=40, help="model calls per turn at most")
    return p


def _progress(json_mode: bool):
    out = sys.stderr

    def on_event(kind: str, data: dict[str, Any]) -> None:
        if kind == "text_delta":
            out.write(data["delta"])
        elif kind == "tool_call":
            n = data["node"]
            args = orjson.dumps(n.get("input")).decode()
            out.write(f"\n→ {n['name']}({args[:200]})\n")
        elif kind == "node_updated":
            n = data["node"]
            if n["role"] == "code" and n["status"] != "running" and "tool_call_id" in n.get("metadata", {}):
                out.write(f"← {n['name']}: {n['status']}\n")
            elif n["role"] == "llm" and n["status"] in ("completed", "error", "cancelled"):
                out.write("\n")
        elif kind == "node_appended" and data["node"].get("metadata", {}).get("source") == "task_followup":
            out.write(f"\n[follow-up] {str(data['node'].get('output'))[:200]}\n")
        out.flush()
    return on_event


def main(argv: list[str]) -> int:
    try:
        args = parser().parse_args(argv)
    except SystemExit as e:
        return int(e.code or 0) if e.code in (0, None) else EXIT_USAGE
    from ..core.errors import InvalidSessionIdError, SessionResumeError
    from ..runtime import Runtime, allow_policy, answers_file_handler, provider_from_env, run_task
    from ..runtime.ask_user import default_handler
    from ..runtime.errors import AskUserUnavailableError
    from ..runtime.providers import ProviderError

    allowed = {a.strip() for a in args.allow.split(",") if a.strip()}
    bad = allowed - set(PERMISSIONS) - {"all"}
    if bad:
        print(f"sessiondag run: unknown permission(s) {sorted(bad)}; use {','.join(PERMISSIONS)}", file=sys.stderr)
        return EXIT_USAGE
    workdir = os.path.abspath(args.workdir) if args.workdir else os.getcwd()
    if not os.path.isdir(workdir):
        print(f"sessiondag run: working dir {workdir!r} does not exist", file=sys.stderr)
        return EXIT_USAGE
    try:
        provider = provider_from_env(args.provider, script=args.script, model=args.model)
        ask = answers_file_handler(args.answers) if args.answers else default_handler()
    except (ProviderError, AskUserUnavailableError) as e:
        print(f"sessiondag run: {e}", file=sys.stderr)
        return EXIT_USAGE
    rt = Runtime(provider, ask_user=ask, permissions=allow_policy(allowed), on_event=_progress(args.json),
                 max_steps=args.max_steps)
    old = signal.signal(signal.SIGINT, lambda *_: rt.cancel())
    try:
        result = run_task(args.task, session_id=args.session, working_dir=workdir, runtime=rt,
                          branch_from=args.branch_from)
    except SessionResumeError as e:
        print(f"sessiondag run: resume refused ({e.reason}): {e}", file=sys.stderr)
        return EXIT_RESUME_REFUSED
    except InvalidSessionIdError as e:
        print(f"sessiondag run: {e}", file=sys.stderr)
        return EXIT_USAGE
    finally:
        signal.signal(signal.SIGINT, old)
    line = f"session: {result.session_id} (pass --session {result.session_id} to continue)"
    if args.json:
        sys.stdout.write(orjson.dumps({"session_id": result.session_id, "head_id": result.head_id,
                                       "stop_reason": result.stop_reason, "usage": result.usage,
                                       "text": result.text, "error": result.error}).decode() + "\n")
        print(line, file=sys.stderr)
    else:
        if result.text:
            print(result.text)
        if result.error:
            print(f"error: {result.error['type']}: {result.error['message']}", file=sys.stderr)
        print(line)
    sys.stdout.flush()
    return EXIT_OK if result.stop_reason == "end_turn" else EXIT_AGENT_ERROR

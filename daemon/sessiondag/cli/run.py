"""`sessiondag run "TASK"`: one agent turn, headless (CI), always through a daemon's `agent/prompt`
(cli/remote_run.py): the daemon that serves the state dir when one runs (so editors watching the
session see it live), else a private `sessiondag serve --stdio` child of this run.

    sessiondag run "TASK" [--session ID [--new] | --continue] [--workdir DIR] [--state-dir DIR]
                          [--retry | --edit N | --branch-from NODE] [--allow-working-dir-mismatch]
                          [--provider KIND|PROFILE] [--script FILE] [--model NAME] [--temperature T]
                          [--max-tokens N] [--max-steps N] [--json] [--allow write,run] [--answers FILE]
                          [--private] [--push REMOTE]
                          [--budget-usd D] [--budget-tokens N] [--session-budget-usd D]
                          [--session-budget-tokens N]     (docs/usage.md: the run stops before a call over them)

Streams progress to stderr, waits for the sub-agents the turn spawned (and their follow-up turns),
and prints the answer and `session: <id> (pass --session <id> to continue)`. With --json, stdout is
one JSON object {session_id, head_id, stop_reason, usage, text, error} and the session line goes to
stderr. Ids may be given as unique prefixes.

SIGINT, SIGTERM and SIGHUP cancel the turn like a user would: the text streamed so far is kept, the
model node ends `cancelled`, the turn is committed, and the exit status is 128 + the signal number.
A second signal ends the process at once.

`--private` (formerly `--in-process`, still accepted) runs the turn in a private child even when a
daemon serves the state dir. A run in another working dir than the session's is recorded as a
rebind (session/open `allow_working_dir_mismatch`): with --allow-working-dir-mismatch, a
`[working_dirs] remap` rule of the settings file (cli/remap.py) or a checkout of the same project.

Exit codes: 0 done · 1 agent error (the error turn is committed) · 2 usage error · 3 resume refused
(unknown session without --new, another working dir without --allow-working-dir-mismatch) ·
4 the turn ran but `--push REMOTE` failed (its typed code on stderr; docs/sync.md) · 128+N cancelled by
signal N. `--push REMOTE` pushes the session to a git remote after the turn (CI: docs/sync.md), also
after an error turn or a cancel (the committed turn is what travels).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from typing import TYPE_CHECKING, cast

import orjson

from ..core.settings import MCP_ALLOW_RE
from . import run_plan
from .common import NoSession, Parser, UsageError
from .report import add_report_arguments, report_limits

if TYPE_CHECKING:
    from ..report import Limits
    from sessiondag_client.wire import protocol as wp

    from ..store.handles import SessionStore
    from .model import RunSettings
    from .remote_run import RunResult

EXIT_OK, EXIT_AGENT_ERROR, EXIT_USAGE, EXIT_RESUME_REFUSED, EXIT_PUSH_FAILED = 0, 1, 2, 3, 4
PERMISSIONS = ("write", "run", "mcp")   # and mcp:<server>, mcp:<server>/<tool> (docs/mcp.md)
PROG = "sessiondag run"


def parser() -> argparse.ArgumentParser:
    p = Parser(prog=PROG, description="Run an agent task headless.")
    p.add_argument("task", nargs="?", help="the task (the user message; `-` or none with a pipe: read from "
                                           "stdin); optional with --retry")
    p.add_argument("--session", help="continue this session (id or unique prefix)")
    p.add_argument("--new", action="store_true", help="with --session: create the session if it does not exist")
    p.add_argument("-c", "--continue", dest="cont", action="store_true",
                   help="continue the most recent session of the working dir")
    p.add_argument("--workdir", default=None, help="working dir (default: the current directory)")
    p.add_argument("--state-dir", default=None, help="state directory (default: $SESSIONDAG_HOME …)")
    p.add_argument("--allow-working-dir-mismatch", action="store_true",
                   help="resume a session recorded for another working dir (recorded as a rebind)")
    p.add_argument("--provider", default=None,
                   help="scripted | openai | anthropic | a profile of the settings file "
                        "(default: the session's recorded one, else $SESSIONDAG_PROVIDER or scripted)")
    p.add_argument("--script", help="script file (JSON or YAML) for the scripted provider")
    p.add_argument("--model", help="model name (default: the session's, else the profile's, else $SESSIONDAG_MODEL)")
    p.add_argument("--temperature", type=float, help="sampling temperature (0-2)")
    p.add_argument("--max-tokens", type=int, help="output tokens per model call at most")
    p.add_argument("--json", action="store_true", help="print one machine-readable result on stdout")
    p.add_argument("--allow", default="", help="permissions to grant: write,run (default: none)")
    p.add_argument("--answers", help="answers file for ask_user in non-interactive runs (JSON/YAML)")
    p.add_argument("--branch-from", metavar="N|NODE",
                   help="branch off after turn N of the current branch (the [N] of `sessions log`), "
                        "or from a node (id, unique prefix or #SEQ)")
    p.add_argument("--retry", action="store_true", help="retry the last turn, which failed or was cancelled")
    p.add_argument("--edit", type=int, metavar="N", help="fork turn N of the current branch with TASK as its text")
    p.add_argument("--restore-files", action=argparse.BooleanOptionalAction, default=None,
                   help="with --branch-from/--retry/--edit: put the files back as they were at the fork point "
                        "(default: the setting workspace.restore_files: ask in a terminal, off headless)")
    p.add_argument("--max-steps", type=int, default=40, help="model calls per turn at most")
    p.add_argument("--budget-usd", type=float, help="stop before a model call that would spend more (dollars)")
    p.add_argument("--budget-tokens", type=int, help="stop before a model call that would use more tokens")
    p.add_argument("--session-budget-usd", type=float, help="the same for the session's whole spend")
    p.add_argument("--session-budget-tokens", type=int, help="the same for the session's whole token count")
    p.add_argument("--private", "--in-process", dest="private", action="store_true",
                   help="run the turn in a private daemon child of this run even when a daemon serves the state dir")
    p.add_argument("--push", metavar="REMOTE", help="push the session to this git remote after the turn (docs/sync.md)")
    p.add_argument("--report", metavar="FILE", help="write the session's HTML report to FILE after the turn "
                                                     "(whatever its outcome; docs/report.md)")
    add_report_arguments(p)
    return p


def task_from_stdin(args: argparse.Namespace) -> None:
    """`echo TASK | sessiondag run` (or TASK `-`): the task is what the pipe (or file) holds."""
    import stat
    try:
        mode = os.fstat(sys.stdin.fileno()).st_mode
    except (OSError, ValueError, AttributeError):
        return
    piped = stat.S_ISFIFO(mode) or stat.S_ISREG(mode)
    if args.task == "-" or (args.task is None and not args.retry and piped):
        text = sys.stdin.read().strip()
        args.task = text or None


def check_args(args: argparse.Namespace) -> None:
    if args.cont and args.session:
        raise UsageError("--continue and --session are exclusive")
    if args.new and not args.session:
        raise UsageError("--new creates the session named by --session ID")
    picked = [n for n, on in (("--retry", args.retry), ("--edit", args.edit is not None),
                              ("--branch-from", args.branch_from)) if on]
    if len(picked) > 1:
        raise UsageError(f"{' and '.join(picked)} are exclusive")
    if (args.retry or args.edit is not None) and not (args.session or args.cont):
        raise UsageError(f"{picked[0]} needs the session: --session ID or --continue")
    if not args.task and not args.retry:
        raise UsageError("the task is required (an argument, or piped on stdin; none with --retry)")
    if args.temperature is not None and not 0 <= args.temperature <= 2:
        raise UsageError("--temperature must be between 0 and 2")
    if args.max_tokens is not None and args.max_tokens < 1:
        raise UsageError("--max-tokens must be at least 1")
    for name in ("budget_usd", "budget_tokens", "session_budget_usd", "session_budget_tokens"):
        v = getattr(args, name)
        if v is not None and not v > 0:
            raise UsageError(f"--{name.replace('_', '-')} must be > 0")
    if args.max_steps < 1:
        raise UsageError("--max-steps must be at least 1")
    if (args.redact or args.max_body_kb != 64) and not args.report:
        raise UsageError("--redact and --max-body-kb shape the report: pass --report FILE")


def main(argv: list[str], flags: dict[str, tuple[str, str]] | None = None) -> int:
    """`flags`: the command line's `-c NAME=VALUE` settings (cli/__init__.py), for a private daemon."""
    try:
        args = parser().parse_args(argv)
        task_from_stdin(args)
        check_args(args)
    except SystemExit as e:
        return int(e.code or 0) if e.code in (0, None) else EXIT_USAGE
    except UsageError as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return EXIT_USAGE
    from sessiondag_client import RpcError
    from sessiondag_client import SessionDagError as WireError
    from ..core.errors import (ConfigError, InvalidSessionIdError, McpServerError, NoCheckpointError, SessionDagError,
                               SessionResumeError, TurnRunningError, WorkspaceDirtyError)
    from ..runtime.errors import AskUserUnavailableError
    from ..runtime.providers import ProviderError
    from ..context.store_factory import open_store
    from ..workspace.checkpointer import install as install_checkpoints

    allowed = {a.strip() for a in args.allow.split(",") if a.strip()}
    bad = {a for a in allowed - set(PERMISSIONS) - {"all"} if not re.fullmatch(MCP_ALLOW_RE, a)}
    if bad:
        print(f"{PROG}: unknown permission(s) {sorted(bad)}; use {','.join(PERMISSIONS)}", file=sys.stderr)
        return EXIT_USAGE
    workdir = os.path.abspath(args.workdir) if args.workdir else os.getcwd()
    if not os.path.isdir(workdir):
        print(f"{PROG}: working dir {workdir!r} does not exist", file=sys.stderr)
        return EXIT_USAGE
    store = open_store(args.state_dir)
    install_checkpoints(store)
    try:
        plan = run_plan.plan(store, args, workdir)
        limits = report_limits(args) if args.report else None
        code = _execute(store, args, plan, workdir, allowed, flags)
        code = _push_after(store, args, code) if args.push else code
        return _report_after(store, args, limits, code) if args.report else code
    except UsageError as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return EXIT_USAGE
    except (ProviderError, AskUserUnavailableError) as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return EXIT_USAGE
    except NoSession as e:
        print(f"{PROG}: {e}" + ("" if args.cont else " (pass --new to create it)"), file=sys.stderr)
        return EXIT_RESUME_REFUSED
    except SessionResumeError as e:
        hint = " (pass --allow-working-dir-mismatch to rebind it here)" if e.reason == "working_dir_mismatch" else ""
        print(f"{PROG}: resume refused ({e.reason}): {e}{hint}", file=sys.stderr)
        return EXIT_RESUME_REFUSED
    except InvalidSessionIdError as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return EXIT_USAGE
    except (WorkspaceDirtyError, TurnRunningError, NoCheckpointError) as e:   # --restore-files refused
        print(f"{PROG}: restore refused: {e} (see sessiondag sessions restore --help)", file=sys.stderr)
        return EXIT_RESUME_REFUSED
    except (McpServerError, ConfigError, SessionDagError, WireError, RpcError) as e:  # an MCP server of the working
        # dir that did not start, any other refusal, here or by the daemon: one line
        print(f"{PROG}: {e}", file=sys.stderr)
        return EXIT_AGENT_ERROR
    finally:
        store.close()


def _settings(args: argparse.Namespace) -> RunSettings:
    """The model settings given on the command line (agent/prompt keys)."""
    from .model import put_flags
    out: RunSettings = {}
    put_flags(out, args)
    budget = _budget(args)
    if budget:
        out["budget"] = budget
    return out


def _budget(args: argparse.Namespace) -> wp.AgentPromptParamsBudget:
    """The --budget-* limits as agent/prompt's `budget` (docs/usage.md)."""
    out = {"usd": args.budget_usd, "tokens": args.budget_tokens, "session_usd": args.session_budget_usd,
           "session_tokens": args.session_budget_tokens}
    # argparse's float and int (`type=` above), the unset ones left out
    return cast("wp.AgentPromptParamsBudget", {k: v for k, v in out.items() if v is not None})


def _daemon_socket(store: SessionStore, args: argparse.Namespace) -> str | None:
    """The socket of the daemon serving the state dir (None: none, or --private: a child of ours)."""
    if args.private:
        return None
    from sessiondag_client.discovery import find_daemon
    info = find_daemon(store.state_dir)
    return info["socket"] if info else None


def _execute(store: SessionStore, args: argparse.Namespace, plan: run_plan.RunPlan, workdir: str, allowed: set[str],
             flags: dict[str, tuple[str, str]] | None) -> int:
    import anyio
    from sessiondag_client import InvalidParamsError
    from ..runtime import answers_file_handler
    from ..runtime.ask_user import default_handler
    from .model import resolve_model
    from .permission_prompt import run_permissions
    from .progress import progress_for
    from .remote_run import ChildGone, child_env, run_turn
    settings = _settings(args)
    model = resolve_model(store, plan["session_id"], settings)  # here, in this shell: a bad one is a usage error
    wire = {**model.wire(), **({"budget": settings["budget"]} if settings.get("budget") else {})}
    ask = answers_file_handler(args.answers) if args.answers else default_handler(store.settings())
    progress = progress_for(args.json)
    permit = run_permissions(allowed, progress=progress)
    socket = _daemon_socket(store, args)
    try:
        with progress:
            res, signum = anyio.run(lambda: run_turn(
                socket, plan, workdir, state_dir=store.state_dir, env=child_env(flags), settings=wire, ask=ask,
                permit=permit, on_event=progress, max_steps=args.max_steps, rebind=args.allow_working_dir_mismatch))
    except InvalidParamsError as e:
        raise UsageError(e.message) from None
    except ChildGone as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return EXIT_AGENT_ERROR
    except ConnectionError as e:  # the daemon went away mid-turn (what it wrote is in the session)
        print(f"{PROG}: lost the daemon{f' at {socket}' if socket else ''}: {e}", file=sys.stderr)
        return EXIT_AGENT_ERROR
    args.result_session = res["session_id"]
    return report(res, args.json, streamed="".join(progress.streamed), signum=signum)


def _push_after(store: SessionStore, args: argparse.Namespace, code: int) -> int:
    """`--push REMOTE`: the session's committed history to the remote (sync/push.py), refusals typed."""
    from ..core.errors import SessionDagError
    from ..sync import push, remotes
    sid = getattr(args, "result_session", None)
    if sid is None:
        return code
    try:
        res = push.push(store, remotes.resolve(store.state_dir, args.push), sid, store.settings(), commit_first=True)
    except SessionDagError as e:
        print(f"{PROG}: push to {args.push} refused: {e.code}: {e}", file=sys.stderr)
        return EXIT_PUSH_FAILED
    print(f"pushed {sid} to {args.push} ({res['status']}, {res['objects']} objects)", file=sys.stderr)
    return code


def _report_after(store: SessionStore, args: argparse.Namespace, limits: Limits | None, code: int) -> int:
    """`--report FILE`: the session as one HTML page (cli/export.py), also after a failed turn."""
    from ..core.errors import SessionDagError
    from .export import export, write_out
    sid = getattr(args, "result_session", None)
    if sid is None:
        return code
    try:
        s = store.session(sid)
        s.refresh()  # a daemon ran the turn: catch up with what it wrote
        text = export(s, None, "html", limits)
    except SessionDagError as e:
        print(f"{PROG}: report not written: {e}", file=sys.stderr)
        return code or EXIT_AGENT_ERROR
    wrote = write_out(text, args.report, PROG)
    return wrote if code == EXIT_OK else code


def report(res: RunResult, json_mode: bool, *, streamed: str, signum: int | None) -> int:
    sid = res["session_id"]
    line = f"session: {sid} (pass --session {sid} to continue)"
    if res["stop_reason"] == "cancelled" and signum is None and not res["error"]:   # not by this process
        print(f"cancelled: the turn was cancelled from elsewhere (another client, or the daemon stopping); it is "
              f"committed — `sessiondag run --retry --session {sid}` runs it again", file=sys.stderr)
    if json_mode:
        sys.stdout.write(orjson.dumps(res).decode() + "\n")
        print(line, file=sys.stderr)
    else:
        shown = sys.stdout.isatty() and sys.stderr.isatty() and streamed.endswith(res["text"] or "")
        if res["text"] and not shown:  # on a terminal the streamed answer is already on screen
            print(res["text"])
        if res["error"]:
            print(f"error: {res['error']['type']}: {res['error']['message']}", file=sys.stderr)
        print(line)
    sys.stdout.flush()
    if signum is not None:
        return 128 + signum
    return EXIT_OK if res["stop_reason"] == "end_turn" else EXIT_AGENT_ERROR

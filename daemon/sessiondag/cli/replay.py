"""`sessiondag replay ID NODE [--model M] [--provider P] [--temperature T] [--max-tokens N]
[--system FILE] [--edit N=TEXT]... [--name NAME] [--json] [--state-dir DIR]`: re-send a recorded
model call with overrides and record the answer on a new branch (runtime/replay.py, docs/replay.md).

`sessiondag replay ID NODE --branch [--to NODE] [--live-tools [--allow write,run]] …`: replay the
whole branch segment from NODE (a user message or a chat-chain model call) teacher-forced
(runtime/replay_branch.py): recorded tool results reused, stopping at the first tool call with no
recorded counterpart; with --live-tools the tools run (after the files are restored to just
before NODE), asking on a terminal for what --allow does not grant.

Runs in this process (the session may be open in a daemon too: writes of several processes are
safe). With neither --provider nor --model, the original call's model on the configured provider.
Prints the new node, its branch and the answer; --json prints {node, branch, text, tool_calls}.
Exit codes: 0 replayed · 1 refused (replay_refused) or the model call failed · 2 usage error.
`sessiondag replay … && sessiondag sessions compare ID ORIGINAL NEW` is the eval loop.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import orjson

from .common import Codes, NoSession, Parser, UsageError, command, resolve_node, resolve_session

if TYPE_CHECKING:
    import argparse

    from ..runtime.providers.base import Provider
    from ..runtime.replay import Edit, Overrides
    from ..store.handles import SessionStore
    from ..store.session import Session

PROG = "sessiondag replay"


def parser() -> Parser:
    p = Parser(prog=PROG, description="Re-send a recorded model call with overrides.")
    p.add_argument("session_id")
    p.add_argument("node", help="the llm node (id, unique prefix or #SEQ)")
    p.add_argument("--provider", help="provider kind or profile (default: the configured one)")
    p.add_argument("--model", help="model (default: the original call's, without --provider)")
    p.add_argument("--temperature", type=float)
    p.add_argument("--max-tokens", type=int)
    p.add_argument("--system", metavar="FILE", help="replace the system prompt with this file's text")
    p.add_argument("--edit", action="append", default=[], metavar="N=TEXT",
                   help="replace message N of the request with TEXT (repeatable)")
    p.add_argument("--name", help="name of the new branch")
    p.add_argument("--branch", action="store_true", help="replay the branch segment from NODE, not one call")
    p.add_argument("--to", metavar="NODE", help="with --branch: where the segment ends (default: its tip)")
    p.add_argument("--live-tools", action="store_true", help="with --branch: run the tools instead of reusing "
                   "the recorded results")
    p.add_argument("--allow", default="", help="with --live-tools: permissions to grant: write,run")
    p.add_argument("--json", action="store_true")
    p.add_argument("--state-dir")
    return p


def _edits(raw: list[str]) -> list[Edit]:
    out: list[Edit] = []
    for e in raw:
        n, sep, text = e.partition("=")
        if not sep or not n.strip().isdigit():
            raise UsageError(f"--edit {e!r}: expected N=TEXT")
        out.append({"message_index": int(n), "content": text})
    return out


def _codes() -> Codes:
    from ..core.errors import SessionDagError
    from ..runtime.providers import ProviderError
    return ((ProviderError, 2), ((NoSession, SessionDagError), 1))   # ProviderError is a SessionDagError


@command(PROG, _codes)
def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    from ..core.model import MODEL_KEY
    from ..runtime import Runtime
    from ..runtime.context import SessionWriter
    from ..runtime.providers import provider_for
    from ..runtime.replay import Overrides, replay_call
    from ..context.store_factory import open_store
    store = open_store(args.state_dir)
    try:
        edits = _edits(args.edit)
        system = None
        if args.system:
            try:
                system = open(args.system, encoding="utf-8").read()
            except OSError as e:
                raise UsageError(f"--system: {e}") from None
        sid = resolve_session(store, args.session_id)
        s = store.session(sid)
        node_id = resolve_node(s, args.node)
        model = args.model
        if model is None and args.provider is None:
            m = s.get_node(node_id).metadata.get(MODEL_KEY)
            model = m if isinstance(m, str) else None
        provider = provider_for(args.provider, model=model, temperature=args.temperature, max_tokens=args.max_tokens,
                                settings=store.settings())
        ov = Overrides(system=system, edits=edits, provider=args.provider, model=model,
                       temperature=args.temperature, max_tokens=args.max_tokens)
        if args.branch:
            return _branch(store, s, node_id, provider, ov, args)
        if args.to or args.live_tools:
            raise UsageError("--to and --live-tools go with --branch")
        r = replay_call(SessionWriter(store, s), Runtime(provider, permissions=lambda k, d: False, config=store.settings()),
                        node_id, ov,
                        args.name)
    finally:
        store.close()
    out = {"node": r["node"].to_dict(), "branch": r["branch"], "text": r["text"], "tool_calls": r["tool_calls"]}
    if args.json:
        sys.stdout.write(orjson.dumps(out, option=orjson.OPT_INDENT_2).decode() + "\n")
    else:
        print(f"replayed {node_id} as {out['node']['id']}" + (f" on branch {out['branch']!r}" if out["branch"] else ""))
        print(r["text"])
        for tc in r["tool_calls"]:
            print(f"  (not run) {tc['name']}({orjson.dumps(tc['arguments']).decode()})")
    return 0


def _branch(store: SessionStore, s: Session, node_id: str, provider: Provider, ov: Overrides,
            args: argparse.Namespace) -> int:
    from ..runtime import Runtime
    from ..workspace.checkpointer import install
    from ..runtime.context import SessionWriter
    from ..runtime.replay_branch import replay_branch
    from .permission_prompt import run_permissions
    allowed = {a.strip() for a in args.allow.split(",") if a.strip()}
    permit = run_permissions(allowed, prog=PROG) if args.live_tools else (lambda k, d: False)
    if args.live_tools:
        install(store)    # workspace checkpoints: the files are restored first
    to = resolve_node(s, args.to) if args.to else None
    r = replay_branch(SessionWriter(store, s), Runtime(provider, permissions=permit, config=store.settings()),
                      node_id, to, ov,
                      "live_tools" if args.live_tools else "recorded_tools", args.name)
    if args.json:
        sys.stdout.write(orjson.dumps(r, option=orjson.OPT_INDENT_2).decode() + "\n")
        return 0
    files = r.get("files") or {}
    if files.get("changes"):
        print(f"files restored to just before {node_id}: {len(files['changes'])} change(s)")
    print(f"replayed the branch from {node_id} as {r['branch']!r} (head {r['head_id']}): {r['calls']} model "
          f"call(s), {r['matched_tools']} recorded tool result(s) reused")
    if r["stopped"]:
        st = r["stopped"]
        print(f"stopped at {st['at']} (turn {st['turn']}): {st['reason']}")
    return 0

"""`sessiondag replay ID NODE [--model M] [--provider P] [--temperature T] [--max-tokens N]
[--system FILE] [--edit N=TEXT]... [--name NAME] [--json] [--state-dir DIR]`: re-send a recorded
model call with overrides and record the answer on a new branch (runtime/replay.py, docs/replay.md).

Runs in this process (the session may be open in a daemon too: writes of several processes are
safe). With neither --provider nor --model, the original call's model on the configured provider.
Prints the new node, its branch and the answer; --json prints {node, branch, text, tool_calls}.
Exit codes: 0 replayed · 1 refused (replay_refused) or the model call failed · 2 usage error.
`sessiondag replay … && sessiondag sessions compare ID ORIGINAL NEW` is the eval loop.
"""

from __future__ import annotations

import sys

import orjson

from .common import NoSession, Parser, UsageError, resolve_node, resolve_session

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
    p.add_argument("--json", action="store_true")
    p.add_argument("--state-dir")
    return p


def _edits(raw: list[str]) -> list[dict]:
    out = []
    for e in raw:
        n, sep, text = e.partition("=")
        if not sep or not n.strip().isdigit():
            raise UsageError(f"--edit {e!r}: expected N=TEXT")
        out.append({"message_index": int(n), "content": text})
    return out


def main(argv: list[str]) -> int:
    try:
        args = parser().parse_args(argv)
    except SystemExit as e:
        return 0 if e.code in (0, None) else 2
    from ..core.errors import SessionDagError
    from ..core.model import MODEL_KEY
    from ..runtime import Runtime
    from ..runtime.context import SessionWriter
    from ..runtime.providers import ProviderError, provider_for
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
        provider = provider_for(args.provider, model=model, temperature=args.temperature, max_tokens=args.max_tokens)
        ov = Overrides(system=system, edits=edits, provider=args.provider, model=model,
                       temperature=args.temperature, max_tokens=args.max_tokens)
        r = replay_call(SessionWriter(store, s), Runtime(provider, permissions=lambda k, d: False), node_id, ov,
                        args.name)
    except (UsageError, ProviderError) as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return 2
    except (NoSession, SessionDagError) as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return 1
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

"""One async framework: the daemon and the Python client are written against anyio, and asyncio is
used directly only by the modules named in EXCEPTIONS, each for its reason, and only through the
asyncio names listed for it; acp/ and integrations/ (their SDKs and frameworks are asyncio's) are a
boundary, free to use it (docs/architecture.md "One async framework"). An AST scan of every module,
in-function imports included, like tests/test_layers.py: a new `asyncio.X` anywhere else fails, and
so does a listed name no longer used (the list stays what the code needs)."""

import ast
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGES = {"sessiondag": os.path.join(ROOT, "daemon", "sessiondag"),
            "sessiondag_client": os.path.join(ROOT, "clients", "python", "sessiondag_client")}

# packages whose library is asyncio's: the ACP SDK's streams, langgraph's async saver, openai-agents
BOUNDARIES = ("sessiondag.acp", "sessiondag.integrations")

_STREAMS = "the daemon's transports are asyncio streams (see sessiondag.rpc.connection)"
_LOOP_HANDOFF = ("a store listener (any thread, holding the session lock) hands events to the loop with "
                 "loop.call_soon_threadsafe, which never blocks; anyio.from_thread.run_sync waits for the loop")

# module -> (the asyncio names it may use, why anyio does not do)
EXCEPTIONS: dict[str, tuple[set[str], str]] = {
    "sessiondag.rpc.connection": (
        {"StreamReader", "StreamWriter", "Task", "CancelledError", "gather", "get_running_loop", "Future", "Event"},
        "send() queues a frame without awaiting (the notifier fans out from plain callbacks) and the backlog bound "
        "reads the transport's write buffer: anyio's streams offer an awaited send only; requests are tasks so "
        "that $/cancelRequest cancels one by id; a server→client request waits on a future"),
    "sessiondag.rpc.outbox": (
        {"Future", "get_running_loop", "wait"},
        "a big frame's pieces are sendmsg'd by a thread on the transport's socket; the loop waits on its future"),
    "sessiondag.rpc.transports": (
        {"StreamReader", "StreamReaderProtocol", "StreamWriter", "streams", "streams.FlowControlMixin",
         "get_running_loop"},
        "stdio's pipes as asyncio streams, so one Connection serves every transport; " + _STREAMS),
    "sessiondag.cli.serve": (
        {"AbstractServer", "start_server", "start_unix_server", "get_running_loop", "run", "StreamReader",
         "StreamWriter"},
        "asyncio's servers hand each client's streams to a Connection; " + _STREAMS),
    "sessiondag.rpc.write_threads": (
        {"AbstractEventLoop", "Future", "get_running_loop"},
        "a write batch's thread answers onto a bare future through call_soon_threadsafe: anyio's to_thread hop "
        "(a checkpoint, the limiter's task, a context copy) costs 3-5x the CPU"),
    "sessiondag.rpc.lifecycle": (
        {"Task", "gather", "get_running_loop"},
        "background tasks spawned from plain callbacks, outliving the request that started them, each "
        "cancellable alone, one failing not cancelling the others (an anyio task group cancels all on an error)"),
    "sessiondag.rpc.daemon": ({"Task"}, "the type of a spawned task (sessiondag.rpc.lifecycle)"),
    "sessiondag.rpc.notifier": ({"AbstractEventLoop", "get_running_loop"}, _LOOP_HANDOFF),
    "sessiondag.rpc.auto_push": ({"AbstractEventLoop"}, _LOOP_HANDOFF),
    "sessiondag.rpc.service": (
        {"AbstractEventLoop", "get_running_loop"},
        "keeps the loop the listeners hand events to (" + _LOOP_HANDOFF + "), and call_soon of the stop "
        "after daemon/stop's reply is written"),
    "sessiondag.cli.chat": ({"run"}, "prompt_toolkit's application runs on asyncio"),
    "sessiondag.cli.chat_app": (
        {"CancelledError", "Event", "Task", "TimeoutError", "get_running_loop", "wait_for"},
        "prompt_toolkit's application runs on asyncio: its tasks and events"),
    "sessiondag.cli.acp": ({"run"}, "the ACP SDK's agent side runs on asyncio (sessiondag.acp)"),
    "sessiondag.cli.remote_run": (
        {"get_running_loop"},
        "the loop's signal handlers: a first SIGINT cancels the turn, a second restores the default and re-raises"),
    "sessiondag_client.background": (
        {"AbstractEventLoop", "Task"},
        "the reader is a free-standing task (create_task on asyncio, a system task on trio): a client is opened "
        "and closed by different tasks, and anyio has structured tasks only"),
    "sessiondag_client.connection": (
        {"AbstractEventLoop", "Future"},
        "on asyncio a call waits on one bare future the reader resolves (deadlines.answer_due): an anyio Event "
        "and two cancel scopes per call cost ~40 µs of a ~120 µs daemon/ping round trip (bench/client_bench.py)"),
    "sessiondag_client.deadlines": (
        {"Future"}, "answer_due: the answer's future, resolved by the reader or by a call_later timer"),
    "sessiondag_client.socket_stream": (
        {"AbstractEventLoop", "StreamReader", "StreamWriter", "open_connection", "open_unix_connection"},
        "anyio's asyncio Unix stream resolves its readable-future twice when closed in the iteration that finds "
        "the socket readable (tests/e2e/test_socket_streams.py); TCP takes the same stream"),
    "sessiondag_client.wire.codec": (
        {"StreamReader", "IncompleteReadError", "LimitOverrunError"},
        "read_frame cuts frames from the daemon's asyncio streams (" + _STREAMS + ")"),
}


def asyncio_uses(source: str) -> set[str] | None:
    """The asyncio names a module uses (`asyncio.X`, `asyncio.a.B` as "a.B", `from asyncio import X`),
    or None if it never imports asyncio."""
    tree = ast.parse(source)
    aliases: set[str] = set()
    names: set[str] = set()
    imported = False
    for n in ast.walk(tree):
        if isinstance(n, ast.Import):
            for a in n.names:
                if a.name == "asyncio" or a.name.startswith("asyncio."):
                    imported = True
                    aliases.add(a.asname or "asyncio")
                    if a.name != "asyncio":
                        names.add(a.name.removeprefix("asyncio."))
        elif isinstance(n, ast.ImportFrom) and n.module and n.module.split(".")[0] == "asyncio":
            imported = True
            prefix = n.module.removeprefix("asyncio").lstrip(".")
            names |= {f"{prefix}.{a.name}" if prefix else a.name for a in n.names}
    for n in ast.walk(tree):
        if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id in aliases:
            names.add(n.attr)
        elif (isinstance(n, ast.Attribute) and isinstance(n.value, ast.Attribute)
              and isinstance(n.value.value, ast.Name) and n.value.value.id in aliases):
            names.add(f"{n.value.attr}.{n.attr}")
    return names if imported else None


def _modules():
    for pkg, root in PACKAGES.items():
        for dirpath, _, files in os.walk(root):
            for f in sorted(files):
                if f.endswith(".py"):
                    path = os.path.join(dirpath, f)
                    name = pkg + "." + os.path.relpath(path, root)[:-3].replace(os.sep, ".")
                    yield name.removesuffix(".__init__"), path


def _uses() -> dict[str, set[str]]:
    out = {}
    for name, path in _modules():
        with open(path, encoding="utf-8") as f:
            used = asyncio_uses(f.read())
        if used is not None and not name.startswith(BOUNDARIES):
            out[name] = used
    return out


def test_asyncio_only_where_named_and_only_what_is_named():
    bad = {}
    for name, used in _uses().items():
        allowed = EXCEPTIONS.get(name, (set(), ""))[0]
        if used - allowed:
            bad[name] = sorted(used - allowed)
    assert not bad, ("asyncio used where the rule says anyio (docs/architecture.md 'One async framework'); "
                     f"use anyio, or name the module and the reason in EXCEPTIONS: {bad}")


def test_every_exception_is_still_needed():
    uses = _uses()
    stale = {name: sorted(allowed - uses.get(name, set())) for name, (allowed, _) in EXCEPTIONS.items()
             if allowed - uses.get(name, set())}
    assert not stale, f"asyncio names no longer used: take them out of EXCEPTIONS: {stale}"
    assert all(reason for _, reason in EXCEPTIONS.values())


def test_the_boundaries_are_packages_that_exist():
    names = {name for name, _ in _modules()}
    assert all(b in names for b in BOUNDARIES)


@pytest.mark.parametrize("source, want", [
    ("import asyncio\nasyncio.sleep(1)\n", {"sleep"}),
    ("def f():\n    import asyncio as aio\n    aio.get_running_loop().call_soon(f)\n", {"get_running_loop"}),
    ("from asyncio import Queue, streams\n", {"Queue", "streams"}),
    ("import asyncio\nx: asyncio.streams.FlowControlMixin\n", {"streams", "streams.FlowControlMixin"}),
    ("from asyncio.streams import StreamReader\n", {"streams.StreamReader"}),
    ("import anyio\nanyio.sleep(1)\n", None),
])
def test_the_scan_sees_every_way_of_using_asyncio(source, want):
    assert asyncio_uses(source) == want

"""Copy the Agents SDK's implementation-independent session tests, adapting only the fixtures.

    pip download --no-binary :all: --no-deps openai-agents==0.24.0 && tar xzf openai_agents-0.24.0.tar.gz
    python tests/integrations/sdk_tests_extract.py openai_agents-0.24.0 > body.py

body.py is what follows the header of test_agents_sdk_session_suite.py (not run by pytest).
"""
import ast, re, sys

SRC = (sys.argv[1] if len(sys.argv) > 1 else "openai_agents-0.24.0") + "/tests/memory/"
SQLITE_ONLY = re.compile(r"sqlite3|_connections|_local\b|corrupt|is closed|_lock|worker_thread|_drop_sqlite|"
                         r"file_lock|rollback|quarantin|_await_mutation|monkeypatch|cancellation")

def pick(path, skip_names=()):
    src = open(path).read()
    tree = ast.parse(src)
    lines = src.splitlines()
    out = []
    for node in tree.body:
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        start = min([d.lineno for d in node.decorator_list] + [node.lineno]) - 1
        text = "\n".join(lines[start:node.end_lineno])
        if node.name in skip_names:
            continue
        if node.name.startswith("test_") and SQLITE_ONLY.search(text):
            continue
        if not node.name.startswith("test_") and node.name not in ("run_agent_async", "_run_sync_wrapper"):
            continue
        out.append((node.name, text))
    return out

def adapt(text):
    text = text.replace("@pytest.mark.asyncio", "@pytest.mark.anyio")
    text = text.replace("SQLiteSession(", "make_session(")
    return text

funcs = pick(SRC + "test_session.py", skip_names=("test_session_add_items_exception_propagates_in_streamed",)) + pick(SRC + "test_session_limit.py", skip_names=("run_agent_async", "_run_sync_wrapper"))
names = [n for n, _ in funcs]
body = "\n\n\n".join(adapt(t) for _, t in funcs)
sys.stdout.write(body + "\n")
sys.stderr.write("\n".join(names) + "\n")

"""Agentic functions used by the tests (an importable module, so subprocess bodies can load them)."""

import os

from sessiondag.runtime import agentic_function, ask_user, current_runtime

SUMMARIZE_MARK = "SUMMARIZE-INSTRUCTIONS-7f3a"


@agentic_function(expose="io")
def summarize(text: str) -> str:
    """SUMMARIZE-INSTRUCTIONS-7f3a: summarize the given text in one short sentence."""
    return current_runtime().exec(f"Summarize: {text}")


@agentic_function
def inner(x: int) -> int:
    """Inner step."""
    return x * 2


@agentic_function(expose="full")
def outer(x: int) -> int:
    """Outer step: calls inner twice."""
    return inner(x) + inner(x + 1)


@agentic_function
def explode(msg: str) -> None:
    raise ValueError(msg)


@agentic_function
def calls_explode() -> None:
    explode("deep failure")


@agentic_function
def confirm(question: str) -> str:
    return ask_user(question, ["yes", "no"])


@agentic_function(subprocess=True)
def child_summarize(text: str) -> dict:
    """CHILD-INSTRUCTIONS-91: summarize in the child process."""
    out = current_runtime().exec(f"Child summarize: {text}")
    return {"pid": os.getpid(), "summary": out, "inner": inner(5)}


@agentic_function(subprocess=True)
def child_hang(ready_file: str) -> None:
    """Blocks until killed."""
    import subprocess
    import time
    p = subprocess.Popen(["sleep", "300"])  # a grandchild in the same process group
    with open(ready_file + ".tmp", "w") as f:
        f.write(f"{os.getpid()} {p.pid}")
    os.replace(ready_file + ".tmp", ready_file)
    while True:
        time.sleep(1)


@agentic_function(subprocess=True)
def child_fail() -> None:
    raise KeyError("missing in child")


@agentic_function(subprocess=True)
def child_asks(question: str) -> dict:
    """Asks the user and checks a permission from the child process."""
    from sessiondag.runtime import PermissionDeniedError
    answer = ask_user(question)
    try:
        current_runtime().require_permission("write", {"path": "out.txt"})
        allowed = True
    except PermissionDeniedError:
        allowed = False
    return {"answer": answer, "write_allowed": allowed, "pid": os.getpid()}

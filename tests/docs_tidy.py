"""What the docs cite, checked against the tree (tests/test_docs.py, and the module map in
tests/test_layers.py): repository paths and module files, dotted module names, SESSIONDAG_*
variables, make targets, the module map of docs/architecture.md, its claim that core does no
I/O but one reader, and the constants of docs/settings.md's table (each setting's variables and
default, against core/settings.py). Each checker returns the stale citations as (doc, what) pairs, empty when tidy."""

from __future__ import annotations

import ast
import glob
import importlib
import os
import re

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
PKG = os.path.join(ROOT, "daemon", "sessiondag")
DOCS = sorted(glob.glob(os.path.join(ROOT, "docs", "*.md"))) + [os.path.join(ROOT, p) for p in (
    "README.md", "mk/README.md", "clients/typescript/README.md", "editors/vscode/README.md",
    "editors/nvim/README.md") if os.path.exists(os.path.join(ROOT, p))]
TOP = ("daemon", "clients", "editors", "tests", "bench", "docs", "rpc_schema", "mk")
PACKAGES = tuple(sorted(d for d in os.listdir(PKG) if os.path.isfile(os.path.join(PKG, d, "__init__.py"))))

# cited on purpose though not in this tree, each with why
NOT_HERE = {
    "tests/memory/test_session.py": "a test file of the openai-agents source, not ours",
}
BUILT = (".vsix",)
CODE_SUFFIXES = (".py", ".ts", ".mjs", ".js", ".lua", ".vim", ".mk", ".sh", ".json", ".yaml", ".toml")   # made by `make vsix`, not committed

_PATH = re.compile(r"(?<![\w/.<>@:-])((?:%s)/[\w./*-]*[\w*])" % "|".join(TOP + PACKAGES))
_NAME = re.compile(r"(?<![\w.])(sessiondag(?:_client)?(?:\.[A-Za-z_]\w*)+)")
_ENV = re.compile(r"\b(SESSIONDAG_[A-Z0-9_]*[A-Z0-9])\b")
_MAKE = re.compile(r"`make ([a-z][\w-]*)")
_STATE_FILE = re.compile(r"<state(?: dir)?>/([\w.-]*\w)")
CORE_IO = {"open", "os.open", "os.stat", "os.lstat", "os.listdir", "os.scandir", "os.getenv", "os.environ",
           "tomllib.load", "os.read", "os.write", "os.remove", "os.unlink", "os.rename", "os.replace",
           "os.mkdir", "os.makedirs", "os.path.exists", "os.path.isfile", "os.path.isdir", "os.path.getmtime",
           "os.path.getsize", "os.fstat", "shutil.rmtree", "subprocess.run", "subprocess.Popen"}
CORE_READER = "settings_source.py"   # docs/architecture.md: the one core module that reads (file, environment)


def _docs() -> list[tuple[str, str]]:
    out = []
    for path in DOCS:
        with open(path, encoding="utf-8") as f:
            out.append((os.path.relpath(path, ROOT), f.read()))
    return out


def _methods() -> set[str]:
    from sessiondag.rpc import schema
    return set(schema.load()["methods"])


def stale_paths() -> list[tuple[str, str]]:
    """Repository paths (docs/x.md, tests/…) and module paths (store/handles.py) that do not exist."""
    methods = _methods()
    bad = []
    for doc, text in _docs():
        for m in _PATH.finditer(text):
            p = m.group(1).rstrip(".")
            if p in methods or p in NOT_HERE or p.endswith(BUILT):
                continue
            top = p.split("/")[0]
            if top in PACKAGES and not p.endswith((".py", "/")) and "/" in p and "*" not in p:
                continue   # `context/summary`, `store/…` as a name, not a module path
            candidates = [os.path.join(ROOT, p)] if top in TOP else [os.path.join(PKG, p), os.path.join(ROOT, p)]
            if not any(glob.glob(c) or os.path.exists(c) or os.path.exists(c + ".py") for c in candidates):
                bad.append((doc, p))
    return bad


def _resolves(name: str) -> bool:
    parts = name.split(".")
    for i in range(len(parts), 1, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for attr in parts[i:]:
            if not hasattr(obj, attr):
                return False
            obj = getattr(obj, attr)
        return True
    return False


def stale_names() -> list[tuple[str, str]]:
    """Dotted names `sessiondag.<package>.…` / `sessiondag_client.…` that do not import or resolve
    (`sessiondag.headId`, a metadata key, and other words after `sessiondag.` are not module names)."""
    client = set(os.listdir(os.path.join(ROOT, "clients", "python", "sessiondag_client")))
    bad = []
    for doc, text in _docs():
        for m in _NAME.finditer(text):
            name = m.group(1).rstrip(".")
            first = name.split(".")[1]
            ours = (name.startswith("sessiondag_client.") and (first in client or first + ".py" in client)) or \
                   (name.startswith("sessiondag.") and (first in PACKAGES or os.path.exists(os.path.join(PKG, first + ".py"))))
            if ours and not _resolves(name):
                bad.append((doc, name))
    return bad


def stale_variables() -> list[tuple[str, str]]:
    """SESSIONDAG_* variables the docs name that no code reads or sets."""
    known: set[str] = set()
    for top in ("daemon", "clients", "editors", "mk", "tests", "bench", "Makefile"):
        for path in _code_files(os.path.join(ROOT, top)):
            with open(path, encoding="utf-8", errors="replace") as f:
                known |= set(_ENV.findall(f.read()))
    return [(doc, v) for doc, text in _docs() for v in sorted(set(_ENV.findall(text))) if v not in known]


def _code_files(top: str):
    if os.path.isfile(top):
        yield top
        return
    for d, dirs, files in os.walk(top):
        dirs[:] = [x for x in dirs if x not in ("node_modules", ".venv", "__pycache__", "test-env", "out", "dist")]
        for name in files:
            if name.endswith(CODE_SUFFIXES) or name == "Makefile":
                yield os.path.join(d, name)


def stale_state_files() -> list[tuple[str, str]]:
    """Files and dirs the docs place in the state dir (`<state>/daemon.log`) that no code names as a
    string ("daemon.log"): where a daemon logs, its pidfile, its lock … as the code has them."""
    literals: set[str] = set()
    for top in ("daemon", os.path.join("clients", "python"), os.path.join("clients", "typescript", "src"),
                os.path.join("editors", "nvim", "lua")):
        for path in _code_files(os.path.join(ROOT, top)):
            with open(path, encoding="utf-8", errors="replace") as f:
                literals |= set(re.findall(r"""["'/]([\w.-]+)["']""", f.read()))
    return [(doc, name) for doc, text in _docs() for name in sorted(set(_STATE_FILE.findall(text)))
            if name not in literals]


def stale_make_targets() -> list[tuple[str, str]]:
    """`make X` in the docs where neither the Makefile nor mk/*.mk defines X."""
    text = "".join(open(p, encoding="utf-8").read() for p in [os.path.join(ROOT, "Makefile")] +
                   sorted(glob.glob(os.path.join(ROOT, "mk", "*.mk"))))
    targets = set(re.findall(r"^([a-z][\w-]*)\s*:(?!=)", text, re.M))
    return [(doc, t) for doc, text in _docs() for t in sorted(set(_MAKE.findall(text))) if t not in targets]


def module_map() -> dict[str, str]:
    """docs/architecture.md's module map: package -> the text of its entry."""
    with open(os.path.join(ROOT, "docs", "architecture.md"), encoding="utf-8") as f:
        text = f.read()
    block = text.split("\n```\ndaemon/sessiondag/\n", 1)[1].split("\n```", 1)[0]
    entries: dict[str, str] = {}
    current = None
    for line in block.split("\n"):
        m = re.match(r"^  (\w+)/\s", line)
        if m:
            current = m.group(1)
            entries[current] = line
        elif re.match(r"^\S", line):
            current = None
        elif current:
            entries[current] += " " + line
    return entries


def unmapped_modules() -> list[str]:
    """Modules of daemon/sessiondag/<package>/ that the module map does not name (and packages it lacks)."""
    entries = module_map()
    out = [f"{p}/ (the whole package)" for p in PACKAGES if p not in entries]
    for pkg, text in entries.items():
        words = set(re.findall(r"\w+", text))
        for path in sorted(glob.glob(os.path.join(PKG, pkg, "**", "*.py"), recursive=True)):
            rel = os.path.relpath(path, os.path.join(PKG, pkg))[:-3]
            if rel.endswith("__init__"):
                continue
            if rel.split(os.sep)[-1] not in words and rel.split(os.sep)[0] not in words:
                out.append(f"{pkg}/{rel}.py")
        for cited in sorted(set(re.findall(r"(\w+)\.py\b", text))):
            if not glob.glob(os.path.join(PKG, pkg, "**", cited + ".py"), recursive=True) and \
                    not glob.glob(os.path.join(PKG, "*", cited + ".py")):
                out.append(f"{pkg}: {cited}.py is named but is no module")
    return out


def core_io() -> list[tuple[str, str]]:
    """(core module, I/O call) for every filesystem/environment/process call in core/ outside the reader."""
    out = []
    for path in sorted(glob.glob(os.path.join(PKG, "core", "*.py"))):
        if os.path.basename(path) == CORE_READER:
            continue
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), path)
        for node in ast.walk(tree):
            name = ast.unparse(node.func) if isinstance(node, ast.Call) else (
                ast.unparse(node) if isinstance(node, ast.Attribute) else "")
            if name in CORE_IO:
                out.append((os.path.relpath(path, ROOT), name))
    return out


SETTINGS_DOC = os.path.join(ROOT, "docs", "settings.md")
_SETTING_ROW = re.compile(r"^\| `([a-z_]+\.[a-z_]+)` \| ([^|]*) \| ([^|]*) \|", re.M)
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
_ON_OFF = {"on": True, "off": False}


def stale_settings_table() -> list[tuple[str, str]]:
    """docs/settings.md's table against core/settings.py: every setting has a row, and each row's
    variables are the setting's (in order) and its default is the value Settings resolves with no
    file, no environment and no flag: a number is that number, on/off that switch, a bare word that
    word; a row saying `off`, `none` … for a setting that is unset by default names no value."""
    from sessiondag.core.settings import SPECS, merge
    with open(SETTINGS_DOC, encoding="utf-8") as f:
        rows = _SETTING_ROW.findall(f.read())
    doc = os.path.relpath(SETTINGS_DOC, ROOT)
    specs = {s.name: s for s in SPECS}
    defaults = merge(environ={}, file=None, file_path=os.devnull, flags={})
    bad = [(doc, f"{name}: no row") for name in specs if name not in {r[0] for r in rows}]
    for name, env, cell in rows:
        spec = specs.get(name)
        if spec is None:
            bad.append((doc, f"{name}: no such setting"))
            continue
        if tuple(re.findall(r"`([A-Z][A-Z0-9_]*)`", env)) != spec.env:
            bad.append((doc, f"{name}: variables {env.strip()}, the code's {', '.join(spec.env)}"))
        value, cell = getattr(defaults, spec.attr), cell.strip()
        if spec.default is not None:      # computed from the environment (the state dir): said in words
            continue
        if _NUMBER.fullmatch(cell):
            ok = not isinstance(value, bool) and isinstance(value, (int, float)) and float(cell) == value
        elif isinstance(value, bool):
            ok = _ON_OFF.get(cell) is value
        elif isinstance(value, str):
            ok = cell == value
        else:                             # None or empty: no value to cite
            ok = value in (None, ()) and cell.lower() not in _ON_OFF.keys() - {"off"}
        if not ok:
            bad.append((doc, f"{name}: default {cell}, the code's {value!r}"))
    return bad

"""The settings of a sessiondag process: one frozen `Settings`, merged from four layers

    defaults  <  the config file  <  the environment  <  flags

each value remembering where it came from (`Settings.sources`). Pure: `merge` is handed the parsed
config file, an environment mapping and the flags; reading them is the loader's job
(core/settings_source.py). Every value goes through a strict parser (core/switches.py): a value a
setting does not take raises ConfigError naming its source — the variable, `<file>: section.key`, or
the flag. docs/settings.md lists them all.

What a process writes into a session under these settings (the spill threshold, the aging tail) is
recorded in the session itself (`WRITE_POLICY_KEY`, see store/write_policy.py): the session's record
wins over a later process's settings.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Callable, Final, Literal, Mapping, Never, TypedDict

from . import switches as sw
from .errors import ConfigError
from .mcp_config import McpServer, parse_servers
from .prices import Price, parse_prices

EXPOSE_VALUES = ("io", "full", "none")
SANDBOX_VALUES = ("workspace-write", "read-only", "off")
SANDBOX_VIA_VALUES = ("auto", "landlock", "bwrap")
ALLOW_VALUES = ("write", "run", "mcp", "all")   # plus mcp:<server> and mcp:<server>/<tool> (docs/mcp.md)
PROVIDER_KINDS = ("scripted", "openai", "anthropic")
RESTORE_FILES_VALUES = ("ask", "on", "off")
BENEATH_VALUES = ("auto", "openat2", "walk")   # workspace/beneath.py's resolvers
WRITE_POLICY_KEY = "write_policy"   # session meta: {"node_spill": int|None, "tool_aging_tail_turns": int}
WRITE_POLICY_FIELDS: Final[tuple[Literal["node_spill"], Literal["tool_aging_tail_turns"]]] = (
    "node_spill", "tool_aging_tail_turns")
MCP_ALLOW_RE = r"mcp:[A-Za-z0-9_.-]{1,64}(/[^,\s]{1,128})?"   # one server's tools, or one tool
TABLES = ("providers", "working_dirs", "prices", "mcp_servers")  # file-only tables besides the settings' sections
_EMPTY: Mapping[str, Never] = MappingProxyType({})


class WritePolicy(TypedDict):
    """A session's write policy (session meta WRITE_POLICY_KEY; its fields WRITE_POLICY_FIELDS):
    what every process writing the session uses, whatever its own settings say."""
    node_spill: int | None
    tool_aging_tail_turns: int


@dataclass(frozen=True, slots=True)
class Source:
    """Where a value came from: kind default | file | env | flag; `origin` names it (the file's
    path, the variable, the flag)."""
    kind: str
    origin: str = ""

    def __str__(self) -> str:
        return self.kind if not self.origin else f"{self.kind} {self.origin}"


DEFAULT = Source("default")


@dataclass(frozen=True)
class Settings:
    state_dir: str = ""
    node_spill: int | None = 32 * 1024
    journal_rotate_bytes: int = 4 << 20
    pack_compression: int = 0
    tool_aging: bool = True
    tool_aging_tail_turns: int = 4
    tool_aging_max_result_chars: int = 2000
    expose_default: str = "io"
    fast_render: bool = True              # context/renderer.py: off = the reference renderer
    provider: str = "scripted"
    model: str | None = None
    script: str | None = None
    allow: tuple[str, ...] = ()
    read_hard_links: bool = False
    sandbox: str = "workspace-write"
    sandbox_network: bool = False
    sandbox_via: str = "auto"
    answers: str | None = None
    openai_base_url: str | None = None
    openai_api_key: str | None = None
    anthropic_base_url: str | None = None
    anthropic_api_key: str | None = None
    budget_usd: float | None = None       # per run (a prompt with its sub-agents): docs/usage.md
    budget_tokens: int | None = None
    session_budget_usd: float | None = None
    session_budget_tokens: int | None = None
    switch_interval: float = 0.0005
    max_object_bytes: int = 50 << 20
    auto_push: str | None = None
    transfer_idle_s: float = 60.0
    max_receive_bytes: int = 4 << 30
    checkpoints: bool = True
    max_file_bytes: int = 8 << 20
    max_snapshot_bytes: int = 512 << 20
    snapshot_budget_s: float = 10.0
    session_budget_bytes: int = 2 << 30
    restore_files: str = "ask"
    beneath: str = "auto"                 # workspace/beneath.py: how a path under a working dir is opened
    # tables of the config file: provider profiles and working-dir remaps (see docs/settings.md)
    providers: Mapping[str, Mapping[str, object]] = field(default_factory=lambda: _EMPTY)
    working_dir_remap: Mapping[str, str] = field(default_factory=lambda: _EMPTY)
    prices: Mapping[str, Price] = field(default_factory=lambda: _EMPTY)  # over core/prices.py's defaults
    # [mcp_servers.NAME] tables: MCP servers of every session (core/mcp_config.py, docs/mcp.md)
    mcp_servers: Mapping[str, McpServer] = field(default_factory=lambda: _EMPTY)
    # values of the variables the profiles name in `api_key_env` (secrets: never printed)
    profile_keys: Mapping[str, str] = field(default_factory=lambda: _EMPTY, repr=False)
    config_file: str | None = None        # the file read (None: there was none)
    sources: Mapping[str, Source] = field(default_factory=lambda: _EMPTY, compare=False)

    def source(self, name: str) -> Source:
        return self.sources.get(name, DEFAULT)

    def write_policy(self) -> WritePolicy:
        """What this process would record in a session it writes first (store/write_policy.py)."""
        return {"node_spill": self.node_spill, "tool_aging_tail_turns": self.tool_aging_tail_turns}


@dataclass(frozen=True, slots=True)
class Spec:
    name: str                     # dotted name: [section] key in the file, `-c name=value` on the command line
    parse: Callable[[str, object], object]
    env: tuple[str, ...] = ()     # first one set wins
    doc: str = ""
    secret: bool = False          # never printed; not settable in the file
    default: Callable[[Mapping[str, str]], object] | None = None  # computed from the environment
    in_file: bool = True          # settable in the config file

    @property
    def filed(self) -> bool:
        return self.in_file and not self.secret

    @property
    def attr(self) -> str:
        return self.name.rpartition(".")[2]


def _path(label: str, value: object) -> str:
    return os.path.abspath(os.path.expanduser(sw.parse_text(label, value)))


def _remote_or_off(label: str, value: object) -> str | None:
    if value is False or (isinstance(value, str) and value.strip().lower() in sw.OFF):
        return None
    return sw.parse_text(label, value)


def _default_state_dir(environ: Mapping[str, str]) -> str:
    base = environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return os.path.join(base, "sessiondag")


SPECS: tuple[Spec, ...] = (
    Spec("store.state_dir", _path, ("SESSIONDAG_HOME",),
         "where sessions live (default $XDG_STATE_HOME/sessiondag, else ~/.local/state/sessiondag)",
         default=_default_state_dir, in_file=False),  # clients find the daemon by these variables alone
    Spec("store.node_spill", lambda l, v: sw.parse_off_or_int(l, v, 1), ("SESSIONDAG_NODE_SPILL",),
         "bytes above which a node field is stored as a separate blob, or off (recorded per session)"),
    Spec("store.journal_rotate_bytes", lambda l, v: sw.parse_int(l, v, 1), ("SESSIONDAG_JOURNAL_ROTATE_BYTES",),
         "journal size that triggers its rotation after a commit"),
    Spec("store.pack_compression", lambda l, v: sw.parse_int(l, v, 0, 9), ("SESSIONDAG_PACK_COMPRESSION",),
         "zlib level 0..9 of the packs a commit writes"),
    Spec("rendering.tool_aging", sw.parse_bool, ("SESSIONDAG_TOOL_AGING",),
         "render old tool results cut short (on|off)"),
    Spec("rendering.tool_aging_tail_turns", lambda l, v: sw.parse_int(l, v, 0),
         ("SESSIONDAG_TOOL_AGING_TAIL_TURNS",), "turns kept whole behind the aging boundary (recorded per session)"),
    Spec("rendering.tool_aging_max_result_chars", lambda l, v: sw.parse_int(l, v, 0),
         ("SESSIONDAG_TOOL_AGING_MAX_RESULT_CHARS",), "length an aged tool result is cut to"),
    Spec("rendering.expose_default", lambda l, v: sw.parse_choice(l, v, EXPOSE_VALUES),
         ("SESSIONDAG_EXPOSE_DEFAULT",), "what an unspecified expose means (io|full|none)"),
    Spec("rendering.fast_render", sw.parse_bool, ("SESSIONDAG_FAST_RENDER",),
         "render from the stored JSON lines with the prefix memo (on), or decode every body (off: the "
         "reference renderer; same bytes, slower)"),
    Spec("agent.provider", sw.parse_text, ("SESSIONDAG_PROVIDER",),
         "the provider (scripted|openai|anthropic or a profile of [providers])"),
    Spec("agent.model", sw.parse_text, ("SESSIONDAG_MODEL",), "the model (default: the profile's)"),
    Spec("agent.script", _path, ("SESSIONDAG_SCRIPT",), "the scripted provider's script"),
    Spec("agent.allow", lambda l, v: sw.parse_words(l, v, ALLOW_VALUES, pattern=MCP_ALLOW_RE), ("SESSIONDAG_ALLOW",),
         "what tools may do without asking (write, run, mcp, mcp:<server>, mcp:<server>/<tool>, all); "
         "default: refuse"),
    Spec("agent.read_hard_links", sw.parse_bool, ("SESSIONDAG_READ_HARD_LINKS",),
         "let read_file / search_text read files with more than one hard link (on|off; writes: never)"),
    Spec("agent.sandbox", lambda l, v: sw.parse_choice(l, v, SANDBOX_VALUES), ("SESSIONDAG_SANDBOX",),
         "run_command's OS sandbox: workspace-write (writes only in the working dir and a private tmp), "
         "read-only, off"),
    Spec("agent.sandbox_network", sw.parse_bool, ("SESSIONDAG_SANDBOX_NETWORK",),
         "let sandboxed commands open TCP connections (on|off)"),
    Spec("agent.sandbox_via", lambda l, v: sw.parse_choice(l, v, SANDBOX_VIA_VALUES), ("SESSIONDAG_SANDBOX_VIA",),
         "how the sandbox is applied: auto (Landlock, else bubblewrap), landlock, bwrap"),
    Spec("agent.answers", _path, ("SESSIONDAG_ANSWERS",), "answers file for ask_user when nobody is at a terminal"),
    Spec("agent.openai_base_url", sw.parse_text, ("SESSIONDAG_OPENAI_BASE_URL", "OPENAI_BASE_URL"),
         "endpoint of the built-in openai provider"),
    Spec("agent.openai_api_key", sw.parse_text, ("SESSIONDAG_OPENAI_API_KEY", "OPENAI_API_KEY"),
         "key of the built-in openai provider", secret=True),
    Spec("agent.anthropic_base_url", sw.parse_text, ("SESSIONDAG_ANTHROPIC_BASE_URL", "ANTHROPIC_BASE_URL"),
         "endpoint of the built-in anthropic provider"),
    Spec("agent.anthropic_api_key", sw.parse_text, ("SESSIONDAG_ANTHROPIC_API_KEY", "ANTHROPIC_API_KEY"),
         "key of the built-in anthropic provider", secret=True),
    Spec("agent.budget_usd", lambda l, v: sw.parse_off_or_float(l, v), ("SESSIONDAG_BUDGET_USD",),
         "default spend limit of one run (a prompt and its sub-agents), dollars, or off"),
    Spec("agent.budget_tokens", lambda l, v: sw.parse_off_or_int(l, v, 1), ("SESSIONDAG_BUDGET_TOKENS",),
         "default token limit (input + output) of one run, or off"),
    Spec("agent.session_budget_usd", lambda l, v: sw.parse_off_or_float(l, v), ("SESSIONDAG_SESSION_BUDGET_USD",),
         "spend limit of a whole session, dollars, or off"),
    Spec("agent.session_budget_tokens", lambda l, v: sw.parse_off_or_int(l, v, 1),
         ("SESSIONDAG_SESSION_BUDGET_TOKENS",), "token limit of a whole session, or off"),
    Spec("sync.max_object_bytes", lambda l, v: sw.parse_int(l, v, 1), ("SESSIONDAG_SYNC_MAX_OBJECT_BYTES",),
         "the largest object a sync push sends (bytes; a bigger one is refused, naming its node)"),
    Spec("sync.auto_push", _remote_or_off, ("SESSIONDAG_SYNC_AUTO_PUSH",),
         "a remote (name or URL) the daemon pushes each session to after every turn commit, or off"),
    Spec("sync.transfer_idle_s", sw.parse_float, ("SESSIONDAG_SYNC_TRANSFER_IDLE_S",),
         "seconds a remote may send nothing before a push, pull or list gives it up (sync_unreachable, timeout)"),
    Spec("sync.max_receive_bytes", lambda l, v: sw.parse_int(l, v, 1), ("SESSIONDAG_SYNC_MAX_RECEIVE_BYTES",),
         "the most one pull, clone or list may receive from a remote (bytes; more: sync_bad_remote_data)"),
    Spec("workspace.checkpoints", sw.parse_bool, ("SESSIONDAG_CHECKPOINTS",),
         "snapshot the working dir at every turn (on|off; docs/checkpoints.md)"),
    Spec("workspace.max_file_bytes", lambda l, v: sw.parse_int(l, v, 0), ("SESSIONDAG_MAX_FILE_BYTES",),
         "a file bigger than this is recorded by id and size only"),
    Spec("workspace.max_snapshot_bytes", lambda l, v: sw.parse_int(l, v, 0), ("SESSIONDAG_MAX_SNAPSHOT_BYTES",),
         "new content one snapshot may store; files past it are recorded by id and size only"),
    Spec("workspace.snapshot_budget_s", sw.parse_float, ("SESSIONDAG_SNAPSHOT_BUDGET_S",),
         "seconds a snapshot may walk before it finishes from the watcher's dirty paths"),
    Spec("workspace.session_budget_bytes", lambda l, v: sw.parse_int(l, v, 0), ("SESSIONDAG_SESSION_BUDGET_BYTES",),
         "repository size of a session above which snapshots warn (0: never)"),
    Spec("workspace.restore_files", lambda l, v: sw.parse_choice(l, v, RESTORE_FILES_VALUES),
         ("SESSIONDAG_RESTORE_FILES",), "whether a fork or checkout also restores files (ask|on|off; ask: "
         "in a terminal, off headless)"),
    Spec("workspace.beneath", lambda l, v: sw.parse_choice(l, v, BENEATH_VALUES), ("SESSIONDAG_BENEATH",),
         "how paths under a working dir are opened without following a symlink: auto (openat2 where the "
         "kernel has it, else the walk), openat2, walk (an O_NOFOLLOW walk, component by component)"),
    Spec("daemon.switch_interval", sw.parse_float, ("SESSIONDAG_SWITCH_INTERVAL",),
         "the daemon's sys.setswitchinterval, seconds"),
)
BY_NAME = {s.name: s for s in SPECS}
SECTIONS = tuple(dict.fromkeys(s.name.partition(".")[0] for s in SPECS))


def spec(name: str) -> Spec:
    """The setting called `name` (dotted, or its bare key when that is unique)."""
    if name in BY_NAME:
        return BY_NAME[name]
    hits = [s for s in SPECS if s.attr == name]
    if len(hits) == 1:
        return hits[0]
    raise ConfigError(name, "", f"a setting name, one of {', '.join(BY_NAME)}")


def _not_in_file(s: Spec) -> str:
    where = " or ".join(f"${e}" for e in s.env)
    if s.name == "store.state_dir":   # every client finds the daemon by the environment alone
        return f"it in the environment ({where}) or --state-dir, not the file: every client finds the daemon by those"
    return f"it in the environment ({where}) or a profile's api_key_env / api_key_command, not the file"


def _file_values(table: Mapping[str, object], path: str) -> tuple[dict[str, object], dict[str, object]]:
    """(setting name -> raw value, the file-only tables) of a parsed config file; unknown names refused."""
    values: dict[str, object] = {}
    for section, body in table.items():
        if section in TABLES:
            continue
        if section not in SECTIONS:
            raise ConfigError(f"{path}: [{section}]", "", f"a section of {', '.join(SECTIONS + TABLES)}")
        if not isinstance(body, dict):
            raise ConfigError(f"{path}: {section}", sw.shown(body), "a table")
        for key, value in body.items():
            name = f"{section}.{key}"
            s = BY_NAME.get(name)
            if s is not None and not s.filed:   # a known setting the file may not hold: say where it goes
                raise ConfigError(f"{path}: {name}", "<hidden>" if s.secret else sw.shown(value), _not_in_file(s))
            if s is None:
                known = [x.attr for x in SPECS if x.name.startswith(section + ".") and x.filed]
                raise ConfigError(f"{path}: {name}", sw.shown(value), f"a key of [{section}]: {', '.join(known)}")
            values[name] = value
    return values, {k: table[k] for k in TABLES if k in table}


def _remaps(value: object, path: str) -> Mapping[str, str]:
    remap = value.get("remap") if isinstance(value, dict) else None
    if not isinstance(value, dict) or set(value) - {"remap"} or not isinstance(remap, dict | None) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in (remap or {}).items()):
        raise ConfigError(f"{path}: working_dirs.remap", sw.shown(value), "a table mapping paths to paths")
    return MappingProxyType({os.path.normpath(k): os.path.normpath(v) for k, v in (remap or {}).items()})


def _profiles(value: object, path: str) -> Mapping[str, Mapping[str, object]]:
    if not isinstance(value, dict) or not all(isinstance(p, dict) for p in value.values()):
        raise ConfigError(f"{path}: providers", sw.shown(value), "tables [providers.NAME] of provider profiles")
    return MappingProxyType({k: MappingProxyType(dict(p)) for k, p in value.items()})


def merge(*, environ: Mapping[str, str], file: Mapping[str, object] | None = None, file_path: str | None = None,
          flags: Mapping[str, object] | None = None) -> Settings:
    """The settings of defaults < `file` (the parsed config file at `file_path`) < `environ` < `flags`
    (setting name -> raw value; the flag is named `-c name=value` in errors unless the name maps to a
    (value, flag label) pair). Raises ConfigError naming the first bad value's source."""
    file_vals, tables = _file_values(file or {}, file_path or "config file")
    values: dict[str, Any] = {}
    sources: dict[str, Source] = {}
    for s in SPECS:
        layers: list[tuple[object, str, Source]] = []   # every layer's value is parsed: a bad one is
        if s.name in file_vals:                         # refused even where a higher layer hides it
            layers.append((file_vals[s.name], f"{file_path}: {s.name}", Source("file", file_path or "")))
        var = next((v for v in s.env if environ.get(v, "").strip()), None)
        if var is not None:
            layers.append((environ[var].strip(), var, Source("env", var)))
        if flags and s.name in flags:
            raw = flags[s.name]
            value, label = raw if isinstance(raw, tuple) else (raw, f"-c {s.name}")
            if not (isinstance(value, str) and not value.strip()):
                layers.append((value, label, Source("flag", label)))
        for value, label, src in layers:
            values[s.attr] = s.parse(label, value)
            sources[s.attr] = src
        if not layers and s.default is not None:
            values[s.attr] = s.default(environ)
    path = file_path or "config file"
    if "working_dirs" in tables:
        values["working_dir_remap"] = _remaps(tables["working_dirs"], path)
        sources["working_dir_remap"] = Source("file", path)
    if "prices" in tables:
        values["prices"] = parse_prices(tables["prices"], f"{path}: prices")
        sources["prices"] = Source("file", path)
    if "mcp_servers" in tables:
        values["mcp_servers"] = MappingProxyType(parse_servers(tables["mcp_servers"], path))
        sources["mcp_servers"] = Source("file", path)
    if "providers" in tables:
        values["providers"] = _profiles(tables["providers"], path)
        sources["providers"] = Source("file", path)
        keys = {p["api_key_env"] for p in values["providers"].values() if isinstance(p.get("api_key_env"), str)}
        values["profile_keys"] = MappingProxyType({k: environ[k] for k in sorted(keys) if environ.get(k)})
    return Settings(**values, config_file=file_path if file is not None else None,
                    sources=MappingProxyType(sources))


def described(settings: Settings) -> list[dict[str, object]]:
    """Every setting with its effective value and source, for `sessiondag config` (secrets masked)."""
    out = []
    for s in SPECS:
        value = getattr(settings, s.attr)
        if s.secret and value is not None:
            value = "<set>"
        elif isinstance(value, tuple):
            value = list(value)
        src = settings.source(s.attr)
        out.append({"name": s.name, "value": value, "source": src.kind, "origin": src.origin or None,
                    "env": list(s.env), "doc": s.doc})
    return out


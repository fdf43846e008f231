---@mod sessiondag.paths Where the daemon serving a state dir listens: the rules every client follows,
--- checked against tests/fixtures/discovery.json (as the Python and TypeScript clients are)
local M = {}
local uv = vim.uv or vim.loop

local SUN_PATH_MAX = 107

local function is_dir(p)
  local st = p and uv.fs_stat(p)
  return st ~= nil and st.type == "directory"
end

--- The session store: explicit > $SESSIONDAG_HOME > $XDG_STATE_HOME/sessiondag > ~/.local/state/sessiondag
--- (never the config file: store.state_dir is not a file setting; the daemon refuses a file that sets it)
function M.state_dir(explicit)
  local d = explicit
  if not d or d == "" then
    d = vim.env.SESSIONDAG_HOME
  end
  if not d or d == "" then
    local xdg = vim.env.XDG_STATE_HOME
    if xdg and xdg ~= "" then
      d = xdg .. "/sessiondag"
    else
      d = (vim.env.HOME or uv.os_homedir()) .. "/.local/state/sessiondag"
    end
  end
  return (vim.fs.normalize(vim.fn.fnamemodify(d, ":p")):gsub("/$", ""))
end

--- The per-user runtime dir: $XDG_RUNTIME_DIR/sessiondag, else /tmp/sessiondag-<uid>
function M.runtime_dir()
  local base = vim.env.XDG_RUNTIME_DIR
  if base and base ~= "" and is_dir(base) then
    return base .. "/sessiondag"
  end
  return "/tmp/sessiondag-" .. uv.getuid()
end

--- The real path of `p`, also for a path that does not exist yet (its deepest existing parent is
--- resolved, the rest kept), like Python's os.path.realpath
function M.realpath(p)
  local real = uv.fs_realpath(p)
  if real then
    return real
  end
  local parent, name = vim.fs.dirname(p), vim.fs.basename(p)
  if not parent or parent == p then
    return p
  end
  local rp = M.realpath(parent)
  return (rp == "/" and "" or rp) .. "/" .. name
end

--- The daemon's key for a state dir: sha256 of its real path, 16 hex digits
function M.state_key(state_dir)
  return vim.fn.sha256(M.realpath(state_dir)):sub(1, 16)
end

function M.default_socket(state_dir)
  return M.runtime_dir() .. "/sd-" .. M.state_key(state_dir) .. ".sock"
end

--- Where a daemon of the state dir logs (`sessiondag daemon start` puts it there)
function M.log_path(state_dir)
  return state_dir .. "/daemon.log"
end

--- Where a daemon of the state dir records itself (pid, socket, tcp, log, version)
function M.pidfile_path(state_dir)
  return state_dir .. "/daemon.pid"
end

--- <state>/daemon.pid as a table ({pid, socket, tcp, token_file, state_dir}) or nil
function M.read_pidfile(state_dir)
  local f = io.open(M.pidfile_path(state_dir), "r")
  if not f then
    return nil
  end
  local raw = f:read("*a")
  f:close()
  local ok, t = pcall(vim.json.decode, raw)
  if ok and type(t) == "table" then
    return t
  end
  return nil
end

--- A live process: a positive integer pid (kill(0) and kill(-1) reach groups) that exists and is
--- not a zombie (exited, not yet reaped by its parent)
function M.pid_alive(pid)
  if type(pid) ~= "number" or pid <= 0 or pid ~= math.floor(pid) then
    return false
  end
  local ok, _, code = uv.kill(pid, 0)
  if not (ok == 0 or ok == true) and code ~= "EPERM" then
    return false
  end
  local f = io.open(("/proc/%d/stat"):format(pid), "r")
  if not f then
    return true
  end
  local stat = f:read("*a") or ""
  f:close()
  local state = stat:match("^.*%)%s+(%S+)")
  return state ~= "Z"
end

--- The socket to try: configured > live pidfile's socket > the default for the state dir
function M.socket(opts)
  if opts.socket and opts.socket ~= "" then
    return opts.socket
  end
  local sd = M.state_dir(opts.state_dir)
  local pf = M.read_pidfile(sd)
  if pf and type(pf.socket) == "string" and M.pid_alive(pf.pid) then
    return pf.socket
  end
  return M.default_socket(sd)
end

--- An AF_UNIX address for `path` that fits the kernel limit: a long path is reached through
--- /proc/self/fd/<dirfd>/<name>. Returns address and a closer for the directory fd (or nil).
--- A name too long even so raises "socket name … is too long for AF_UNIX".
function M.short_address(path)
  if #path <= SUN_PATH_MAX - 1 then
    return path, nil
  end
  local parent, name = vim.fs.dirname(vim.fn.fnamemodify(path, ":p")), vim.fs.basename(path)
  local fd = uv.fs_open(parent, "r", 0)
  if not fd then
    return path, nil
  end
  local addr = ("/proc/self/fd/%d/%s"):format(fd, name)
  if #addr > SUN_PATH_MAX - 1 then
    uv.fs_close(fd)
    error(("socket name %q is too long for AF_UNIX"):format(name), 0)
  end
  return addr, function()
    uv.fs_close(fd)
  end
end

return M

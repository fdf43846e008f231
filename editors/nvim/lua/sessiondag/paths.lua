---@mod sessiondag.paths Where the daemon serving a state dir listens (same rules as the Python client)
local M = {}
local uv = vim.uv or vim.loop

local SUN_PATH_MAX = 107

local function is_dir(p)
  local st = p and uv.fs_stat(p)
  return st ~= nil and st.type == "directory"
end

--- The session store: explicit > $SESSIONDAG_HOME > $XDG_STATE_HOME/sessiondag > ~/.local/state/sessiondag
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

--- The daemon's key for a state dir: sha256 of its real path, 16 hex digits
function M.state_key(state_dir)
  local real = uv.fs_realpath(state_dir) or state_dir
  return vim.fn.sha256(real):sub(1, 16)
end

function M.default_socket(state_dir)
  return M.runtime_dir() .. "/sd-" .. M.state_key(state_dir) .. ".sock"
end

--- <state>/daemon.pid as a table ({pid, socket, tcp, token_file, state_dir}) or nil
function M.read_pidfile(state_dir)
  local f = io.open(state_dir .. "/daemon.pid", "r")
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

function M.pid_alive(pid)
  if type(pid) ~= "number" then
    return false
  end
  local ok = uv.kill(pid, 0)
  return ok == 0 or ok == true
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
function M.short_address(path)
  if #path <= SUN_PATH_MAX - 1 then
    return path, nil
  end
  local parent, name = vim.fs.dirname(path), vim.fs.basename(path)
  local fd = uv.fs_open(parent, "r", 0)
  if not fd then
    return path, nil
  end
  return ("/proc/self/fd/%d/%s"):format(fd, name), function()
    uv.fs_close(fd)
  end
end

return M

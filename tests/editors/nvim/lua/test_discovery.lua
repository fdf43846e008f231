-- The plugin's discovery rules (sessiondag.paths) against the language-neutral table every client is
-- checked against (tests/fixtures/discovery.json; the Python and TypeScript suites read the same file).
local H = require("harness")
local uv = vim.uv or vim.loop
local ENV_VARS = { "SESSIONDAG_HOME", "XDG_STATE_HOME", "XDG_RUNTIME_DIR", "SESSIONDAG_CONFIG", "XDG_CONFIG_HOME" }

local function fill(v, tmp)
  if type(v) == "string" then
    return (v:gsub("{tmp}", function() return tmp end):gsub("{uid}", tostring(uv.getuid())))
  elseif type(v) == "table" then
    local out = {}
    for k, x in pairs(v) do
      out[fill(k, tmp)] = fill(x, tmp)
    end
    return out
  end
  return v
end

local keep = {}

local function make_pid(kind)
  if kind == "$alive" then
    return uv.os_getpid()
  elseif kind == "$dead" then
    local p = vim.system({ "true" })
    p:wait()
    return p.pid
  elseif kind == "$zombie" then -- sh's child exits once sh has become sleep (sh could reap it), so nobody reaps it
    local got
    local job = vim.fn.jobstart({ "sh", "-c", 'p=$$; (until read c < /proc/$p/comm && [ "$c" = sleep ]; do :; done) & echo $!; exec sleep 60' }, {
      on_stdout = function(_, data)
        got = got or tonumber(data[1])
      end,
    })
    table.insert(keep, job)
    H.wait(function() return got end, "the zombie's pid")
    H.wait(function()
      local f = io.open(("/proc/%d/stat"):format(got), "r")
      local stat = f and f:read("*a") or ""
      if f then f:close() end
      return stat:match("^.*%)%s+(%S+)") == "Z"
    end, "the zombie")
    return got
  end
  return kind
end

local function mkdtemp()
  return assert(uv.fs_mkdtemp("/tmp/sdfx-XXXXXX")) -- short: the short-address cases count its bytes
end

H.run(function()
  local paths = require("sessiondag.paths")
  local f = assert(io.open(vim.env.SD_TEST_FIXTURE, "r"))
  local table_ = vim.json.decode(f:read("*a"), { luanil = { object = true } })
  f:close()
  local home = vim.env.HOME
  local cwd = vim.fn.getcwd()

  for _, raw in ipairs(table_.cases) do
    local tmp = mkdtemp()
    local c = fill(raw, tmp)
    local what = c.name
    for _, k in ipairs(ENV_VARS) do
      vim.env[k] = nil
    end
    vim.env.HOME = home
    -- a key whose value is JSON null is dropped by luanil: it stays unset, as the table means
    for k, v in pairs(c.env or {}) do
      vim.env[k] = v
    end
    for _, d in ipairs(c.mkdir or {}) do
      vim.fn.mkdir(d, "p")
    end
    for link, target in pairs(c.symlinks or {}) do
      assert(uv.fs_symlink(target, link))
    end
    for file, text in pairs(c.files or {}) do -- a config file: not read
      local out = assert(io.open(file, "w"))
      out:write(text)
      out:close()
    end
    vim.fn.chdir(tmp)
    local sd = paths.state_dir(c.explicit)
    if c.pidfile or c.pidfile_raw then
      local text = c.pidfile_raw
      if not text then
        local pf = vim.deepcopy(c.pidfile)
        pf.pid = make_pid(pf.pid)
        text = vim.json.encode(pf)
      end
      local out = assert(io.open(paths.pidfile_path(sd), "w"))
      out:write(text)
      out:close()
    end
    local want = c.expect
    H.eq(sd, want.state_dir, what .. ": state dir")
    local got = { runtime_dir = paths.runtime_dir(), socket = paths.socket({ state_dir = c.explicit }),
                  log = paths.log_path(sd), pidfile = paths.pidfile_path(sd) }
    for _, k in ipairs({ "runtime_dir", "socket", "log", "pidfile" }) do
      if want[k] ~= nil then
        H.eq(got[k], want[k], what .. ": " .. k)
      end
    end
    if want.default_socket then
      H.eq(got.socket, paths.default_socket(sd), what .. ": the default socket")
    end
    if want.same_socket_as then
      H.eq(got.socket, paths.default_socket(want.same_socket_as), what .. ": same socket")
    end
    if want.pid_alive ~= nil then
      local pf = paths.read_pidfile(sd)
      H.eq(paths.pid_alive(pf.pid), want.pid_alive, what .. ": pid alive")
    end
    vim.fn.chdir(cwd)
    vim.fn.delete(tmp, "rf")
  end
  for _, k in ipairs(ENV_VARS) do -- the rest of this nvim must not see the last case's variables
    vim.env[k] = nil
  end
  for _, job in ipairs(keep) do
    vim.fn.jobstop(job)
  end

  for _, c in ipairs(table_.short_address) do
    local tmp = mkdtemp()
    local base, file = tmp .. "/", "/" .. c.file
    local room = c.total_bytes - #base - #file
    local d = c.dir_fill:rep(math.floor(room / #c.dir_fill))
    d = d .. ("x"):rep(room - #d)
    vim.fn.mkdir(base .. d, "p")
    local p = base .. d .. file
    H.eq(#p, c.total_bytes, c.name .. ": built path bytes")
    local ok, addr, close = pcall(paths.short_address, p)
    if c.address == "error" then
      H.ok(not ok and tostring(addr):find("too long", 1, true), c.name .. ": refused, got " .. tostring(addr))
    elseif c.address == "direct" then
      H.ok(ok, c.name .. ": " .. tostring(addr))
      H.eq(addr, p, c.name .. ": direct")
    else
      H.ok(ok, c.name .. ": " .. tostring(addr))
      H.ok(addr:match("^/proc/self/fd/%d+/") and vim.fs.basename(addr) == c.file, c.name .. ": through /proc: " .. addr)
      H.eq(uv.fs_realpath(vim.fs.dirname(addr)), uv.fs_realpath(vim.fs.dirname(p)), c.name .. ": the same directory")
      close()
    end
    vim.fn.delete(tmp, "rf")
  end
end)

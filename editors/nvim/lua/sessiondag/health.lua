---@mod sessiondag.health :checkhealth sessiondag
local M = {}

local function mode_of(path)
  local st = (vim.uv or vim.loop).fs_stat(path)
  return st and bit.band(st.mode, tonumber("777", 8)) or nil, st
end

function M.check()
  local health = vim.health
  local config = require("sessiondag.config")
  local paths = require("sessiondag.paths")
  local client = require("sessiondag.client")
  local opts = config.options

  health.start("sessiondag: Neovim")
  if vim.fn.has("nvim-0.10") == 1 then
    health.ok("Neovim " .. tostring(vim.version()) .. " (vim.lsp.rpc.connect available)")
  else
    health.error("Neovim 0.10 or newer is required (vim.lsp.rpc.connect)")
  end

  health.start("sessiondag: executable")
  local exe = opts.cmd[1]
  if vim.fn.executable(exe) == 1 then
    health.ok(("`%s` found: %s"):format(exe, vim.fn.exepath(exe)))
  else
    health.error(("`%s` is not executable"):format(exe), {
      "install sessiondag (pip install sessiondag, or `make install` in its checkout) and put it on $PATH",
      "or set require('sessiondag').setup({ cmd = { '/path/to/sessiondag' } })",
    })
  end

  health.start("sessiondag: daemon")
  local sd = paths.state_dir(opts.state_dir)
  health.info("state dir: " .. sd)
  local rdir = paths.runtime_dir()
  local rmode = mode_of(rdir)
  if rmode == nil then
    health.info("runtime dir " .. rdir .. " does not exist yet (created when a daemon starts)")
  elseif rmode == tonumber("700", 8) then
    health.ok(("runtime dir %s is private (0700)"):format(rdir))
  else
    health.error(("runtime dir %s has mode %o; it must be 0700"):format(rdir, rmode))
  end
  local sock = paths.socket(opts)
  local smode, st = mode_of(sock)
  if not st then
    health.warn("no socket at " .. sock .. (opts.auto_start and " (a daemon will be started on first use)" or ""))
  elseif st.type ~= "socket" then
    health.error(sock .. " exists but is not a socket")
  elseif smode == tonumber("600", 8) then
    health.ok(("socket %s (0600)"):format(sock))
  else
    health.error(("socket %s has mode %o; expected 0600"):format(sock, smode))
  end

  if st and st.type == "socket" then
    local done, err, status = false, nil, nil
    client.request("daemon/status", nil, function(e, r)
      done, err, status = true, e, r
    end)
    vim.wait(5000, function()
      return done
    end, 10)
    if not done then
      health.error("the daemon did not answer daemon/status within 5 s")
    elseif err then
      health.error("daemon/status failed: " .. client.describe(err))
    else
      health.ok(("daemon %s running: pid %d, up %.0f s, %d client(s), %d session(s) open")
        :format(status.version, status.pid, status.uptime_s or 0, #(status.clients or {}), #(status.sessions_open or {})))
      if #(status.unbound or {}) > 0 then
        health.warn("unbound sessions (working dir missing): " .. table.concat(status.unbound, ", "))
      end
      if client.started_pid == status.pid then
        health.info("this daemon was started by this Neovim (auto_start); it exits after idle_timeout without clients")
      end
      local info = client.server_info and client.server_info.server_info
      if info then
        health.info(("protocol %s, server %s %s"):format(client.server_info.protocol_version or "?", info.name, info.version))
      end
    end
  end
end

return M

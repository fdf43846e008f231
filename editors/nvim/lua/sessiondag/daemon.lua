---@mod sessiondag.daemon Starting a daemon for the plugin: `sessiondag daemon start --wait --json`
--- The daemon is started the way every client starts it (the CLI, the Python and TypeScript
--- clients): `sessiondag daemon start` decides where it logs (<state dir>/daemon.log, what
--- `sessiondag daemon logs` prints), detaches it and waits until it answers, then prints
--- {pid, socket, log, started} as JSON.
local paths = require("sessiondag.paths")

local M = {}

--- Start (or find) the daemon of the state dir; cb(nil, info) with info = {pid, socket, log,
--- started}, or cb(message) naming what failed (the command's own one-line error).
function M.start(opts, cb)
  local sd = paths.state_dir(opts.state_dir)
  local cmd = vim.deepcopy(opts.cmd)
  vim.list_extend(cmd, { "daemon", "start", "--wait", "--json", "--state-dir", sd })
  if opts.start_timeout then
    vim.list_extend(cmd, { "--timeout", tostring(opts.start_timeout / 1000) })
  end
  if opts.socket then
    vim.list_extend(cmd, { "--socket", opts.socket })
  end
  if opts.idle_timeout and opts.idle_timeout > 0 then
    vim.list_extend(cmd, { "--idle-timeout", tostring(opts.idle_timeout) })
  end
  local limit = opts.start_timeout and opts.start_timeout + 10000 -- the command gives up first, saying why
  local ok, err = pcall(vim.system, cmd, { text = true, timeout = limit }, function(res)
    vim.schedule(function()
      if res.code ~= 0 then
        local why = vim.trim(res.stderr or "")
        return cb(("`%s daemon start` failed (%s): %s"):format(opts.cmd[1],
          res.signal ~= 0 and ("signal " .. res.signal) or ("exit status " .. res.code), why))
      end
      local dok, info = pcall(vim.json.decode, res.stdout or "")
      if not dok or type(info) ~= "table" or type(info.socket) ~= "string" then
        return cb(("`%s daemon start` printed no daemon: %s"):format(opts.cmd[1], vim.trim(res.stdout or "")))
      end
      cb(nil, info)
    end)
  end)
  if not ok then
    cb(("cannot start %s: %s"):format(opts.cmd[1], err))
  end
end

return M

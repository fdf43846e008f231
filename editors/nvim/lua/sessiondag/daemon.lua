---@mod sessiondag.daemon Starting a daemon for the plugin: `sessiondag serve --socket`, detached
local paths = require("sessiondag.paths")
local uv = vim.uv or vim.loop

local M = {}

--- Start `sessiondag serve --socket` detached, logging to <runtime dir>/sd-<key>.log.
--- on_exit(code) is called if it exits (3: another daemon already serves the state dir).
function M.spawn(opts, on_exit_cb)
  local sd = paths.state_dir(opts.state_dir)
  vim.fn.mkdir(paths.runtime_dir(), "p", "0700")
  local log = paths.log_file(sd)
  local fd = uv.fs_open(log, "a", tonumber("600", 8))
  local args = vim.list_slice(opts.cmd, 2)
  vim.list_extend(args, { "serve", "--socket" })
  if opts.socket then
    table.insert(args, opts.socket)
  end
  vim.list_extend(args, { "--state-dir", sd })
  if opts.idle_timeout and opts.idle_timeout > 0 then
    vim.list_extend(args, { "--idle-timeout", tostring(opts.idle_timeout) })
  end
  local handle, pid
  handle, pid = uv.spawn(opts.cmd[1], { args = args, stdio = { nil, fd, fd }, detached = true }, function(code)
    if handle then
      handle:close()
    end
    vim.schedule(function()
      on_exit_cb(code, log)
    end)
  end)
  if fd then
    uv.fs_close(fd)
  end
  if not handle then
    return nil, ("cannot start %s: %s"):format(opts.cmd[1], pid)
  end
  handle:unref()
  return pid
end

--- The last n (default 5) lines of a file, for an error message ("" if it cannot be read).
function M.log_tail(file, n)
  local ok, lines = pcall(vim.fn.readfile, file)
  if not ok then
    return ""
  end
  return table.concat(vim.list_slice(lines, math.max(1, #lines - (n or 5) + 1)), "\n")
end

return M

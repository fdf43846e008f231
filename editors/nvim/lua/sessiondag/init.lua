---@mod sessiondag A Neovim client of the sessiondag daemon (see :help sessiondag)
local M = {}

local registered = false

local function boot()
  if not registered then
    registered = true
    require("sessiondag.handlers").register()
  end
end

--- Configure the plugin; nothing connects until a command is used.
function M.setup(opts)
  require("sessiondag.config").set(opts)
end

M.subcommands = {
  chat = function()
    require("sessiondag.chat").open()
  end,
  sessions = function()
    require("sessiondag.views").sessions()
  end,
  branches = function()
    require("sessiondag.branches").open()
  end,
  render = function()
    require("sessiondag.views").render(require("sessiondag.chat").llm_at_cursor())
  end,
  log = function()
    require("sessiondag.views").log()
  end,
  cancel = function()
    require("sessiondag.chat").cancel()
  end,
  restore = function(rest)
    require("sessiondag.checkpoints").restore(rest)
  end,
  diff = function(rest)
    require("sessiondag.checkpoints").diff(rest)
  end,
  push = function(rest)
    require("sessiondag.sync").push(rest)
  end,
  pull = function(rest)
    require("sessiondag.sync").pull(rest)
  end,
  clone = function(rest)
    require("sessiondag.sync").clone(rest)
  end,
  start = function()
    require("sessiondag.client").start()
  end,
  status = function()
    vim.notify(M.status() ~= "" and M.status() or "sessiondag: no session open", vim.log.levels.INFO)
  end,
}

--- :Sessiondag [subcommand]
function M.command(args)
  boot()
  local sub = args.fargs[1] or "chat"
  local fn = M.subcommands[sub]
  if not fn then
    vim.notify("sessiondag: unknown subcommand " .. sub .. " (one of: " .. table.concat(M.complete(""), ", ") .. ")",
      vim.log.levels.ERROR)
    return
  end
  fn(vim.list_slice(args.fargs, 2))
end

function M.complete(lead)
  local out = {}
  for k in pairs(M.subcommands) do
    if k:sub(1, #lead) == lead then
      table.insert(out, k)
    end
  end
  table.sort(out)
  return out
end

--- Statusline component: session, bound/unbound, running turn, usage ("" when no session is open).
function M.status()
  local s = package.loaded["sessiondag.session"]
  return s and s.status() or ""
end

return M

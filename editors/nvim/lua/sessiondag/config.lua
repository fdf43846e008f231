---@mod sessiondag.config Options and their defaults (see :help sessiondag-setup)
local M = {}

M.defaults = {
  -- the `sessiondag` executable (auto-start and :checkhealth); a list is a command prefix
  cmd = { "sessiondag" },
  -- session store; nil = $SESSIONDAG_HOME, $XDG_STATE_HOME/sessiondag or ~/.local/state/sessiondag
  state_dir = nil,
  -- "socket": the shared per-user daemon (found or started); "stdio": a private
  -- `sessiondag serve --stdio` child of this Neovim
  transport = "socket",
  -- daemon socket; nil = the one the daemon's pidfile names, else <runtime dir>/sd-<key>.sock
  socket = nil,
  -- start `sessiondag serve --socket` when no daemon answers
  auto_start = true,
  -- an auto-started daemon exits after this many seconds without clients
  idle_timeout = 300,
  -- how long to wait for a daemon to become ready (ms)
  start_timeout = 20000,
  -- reconnect when the daemon goes away (restarted, stopped)
  reconnect = true,
  -- chat layout: "split" (horizontal), "vsplit" or "tab"
  layout = "vsplit",
  -- height of the prompt window under the chat
  prompt_height = 4,
  -- fold tool calls and sub-agents in the chat
  fold_calls = true,
  -- buffer-local maps (false disables one)
  keys = {
    cancel = "<C-c>",
    close = "q",
    diff = "gd",
    render = "gr",
    checkout = "<CR>",
    name = "n",
    fork = "f",
    retry = "r",
    compact = "c",
    refresh = "R",
  },
}

M.options = vim.deepcopy(M.defaults)

function M.set(opts)
  M.options = vim.tbl_deep_extend("force", vim.deepcopy(M.defaults), opts or {})
  if type(M.options.cmd) == "string" then
    M.options.cmd = { M.options.cmd }
  end
  return M.options
end

return M

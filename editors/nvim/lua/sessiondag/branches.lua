---@mod sessiondag.branches :Sessiondag branches — the tree of branches, forks and spawn branches
local client = require("sessiondag.client")
local config = require("sessiondag.config")
local session = require("sessiondag.session")
local tree = require("sessiondag.tree_model")
local ui = require("sessiondag.ui")

local M = { buf = nil, entries = {} }

local HELP = "<CR> checkout · n name · f fork with edited prompt · r retry failed turn · c compact up to here · R reload · q close"

local function valid()
  return M.buf and vim.api.nvim_buf_is_valid(M.buf)
end

--- (in a coroutine) Re-read branches and their chains, redraw.
function M.load()
  local sid = session.id
  local lb = client.await("session/list_branches", { session_id = sid })
  local chains = {}
  client.suspend(function(done)
    local pending = #lb.branches
    for _, b in ipairs(lb.branches) do
      client.request("session/get_branch", { session_id = sid, head_id = b.head_id }, function(_, r)
        chains[b.head_id] = r and r.nodes or {}
        pending = pending - 1
        if pending == 0 then
          done()
        end
      end)
    end
    if pending == 0 then
      done()
    end
  end)
  M.entries = tree.build(lb.branches, chains)
  local costs = M.costs(sid)
  if not valid() then
    return
  end
  local lines = { ("# sessiondag branches  %s  (%d)"):format(sid, #lb.branches), "# " .. HELP }
  vim.list_extend(lines, tree.lines(M.entries, costs))
  vim.bo[M.buf].modifiable = true
  vim.api.nvim_buf_set_lines(M.buf, 0, -1, false, lines)
  vim.bo[M.buf].modifiable = false
end

--- (in a coroutine) head id -> cost text: each branch's own spend (session/usage by branch: from its
--- fork on, sub-agents it started included) and each sub-agent's (by subagent, at its spawn branch).
function M.costs(sid)
  local out = {}
  local ok, by_branch = pcall(client.await, "session/usage", { session_id = sid, by = "branch" })
  local ok2, by_sub = pcall(client.await, "session/usage", { session_id = sid, by = "subagent" })
  for _, r in ipairs(ok and by_branch.rows or {}) do
    if r.head_id ~= vim.NIL and r.head_id then
      out[r.head_id] = session.cost_text(r)
    end
  end
  for _, r in ipairs(ok2 and by_sub.rows or {}) do
    if r.head_id ~= vim.NIL and r.head_id then
      out[r.head_id] = session.cost_text(r)
    end
  end
  return out
end

function M.entry_at_cursor()
  return M.entries[vim.api.nvim_win_get_cursor(0)[1] - 2]
end

local function act(fn)
  return function()
    local e = M.entry_at_cursor()
    if e then
      client.run(function()
        fn(e)
        M.load()
      end)
    end
  end
end

local function head_of(e)
  return e.kind == "branch" and e.branch.head_id or e.head_id
end

M.actions = {
  checkout = act(function(e)
    client.await("session/checkout", { session_id = session.id, head_id = head_of(e) })
  end),
  name = act(function(e)
    -- the view may be a moment behind a running turn: name the branch's head as it is now
    local heads = {}
    for _, b in ipairs(client.await("session/list_branches", { session_id = session.id }).branches or {}) do
      heads[b.head_id] = b
    end
    local b = heads[head_of(e)]
    if not b then
      return vim.notify("sessiondag: the branches changed meanwhile; try again", vim.log.levels.WARN)
    end
    local name = ui.input({ prompt = "branch name: ", default = b.name or "" })
    if name then
      client.await("session/name_branch", { session_id = session.id, head_id = b.head_id,
                                            name = name ~= "" and name or vim.NIL })
    end
  end),
  fork = act(function(e)
    if e.kind ~= "turn" then
      return vim.notify("sessiondag: put the cursor on a turn to fork from it", vim.log.levels.WARN)
    end
    local text = ui.input({ prompt = "fork with prompt: ", default = e.text })
    if text and text ~= "" then
      require("sessiondag.chat").send(text, e.node.predecessor)
    end
  end),
  retry = act(function(e)
    if e.kind ~= "turn" or e.status ~= "error" then
      return vim.notify("sessiondag: put the cursor on a failed turn (✗) to retry it", vim.log.levels.WARN)
    end
    require("sessiondag.chat").send(e.text, e.node.predecessor)
  end),
  compact = act(function(e)
    if e.kind ~= "turn" then
      return vim.notify("sessiondag: put the cursor on the last turn to compact", vim.log.levels.WARN)
    end
    local summary = ui.input({ prompt = ("summary of %d nodes: "):format(#e.covers) })
    if summary and summary ~= "" then
      client.await("session/compact", { session_id = session.id, covers_ids = e.covers, summary = summary })
    end
  end),
}

function M.open()
  client.run(function()
    session.ensure()
    if not valid() then
      M.buf = vim.api.nvim_create_buf(false, true)
      vim.api.nvim_buf_set_name(M.buf, "sessiondag://branches")
      vim.bo[M.buf].filetype = "sessiondag_branches"
      vim.bo[M.buf].modifiable = false
      local keys = config.options.keys
      for action, lhs in pairs({ checkout = keys.checkout, name = keys.name, fork = keys.fork, retry = keys.retry,
                                 compact = keys.compact }) do
        if lhs then
          vim.keymap.set("n", lhs, M.actions[action], { buffer = M.buf, desc = "sessiondag: " .. action, nowait = true })
        end
      end
      vim.keymap.set("n", keys.refresh or "R", function()
        client.run(M.load)
      end, { buffer = M.buf, desc = "sessiondag: reload", nowait = true })
      vim.keymap.set("n", keys.close or "q", "<cmd>close<cr>", { buffer = M.buf, nowait = true })
      local timer = (vim.uv or vim.loop).new_timer()
      session.watch("branches", function()
        timer:stop()
        timer:start(50, 0, vim.schedule_wrap(function()
          if valid() then
            client.run(M.load)
          end
        end))
      end)
    end
    if #vim.fn.win_findbuf(M.buf) == 0 then
      vim.cmd("botright split")
      vim.api.nvim_win_set_buf(0, M.buf)
    end
    M.load()
  end)
end

return M

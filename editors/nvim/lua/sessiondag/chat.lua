---@mod sessiondag.chat The chat buffer: the current branch, a prompt window, streaming, folds
local client = require("sessiondag.client")
local config = require("sessiondag.config")
local model_mod = require("sessiondag.chat_model")
local session = require("sessiondag.session")
local view = require("sessiondag.chat_view")

local M = { buf = nil, pbuf = nil, model = model_mod.new(), starts = {}, levels = {}, meta = {}, epoch = 0 }
local hooked = false
local reload_timer

local function valid(b)
  return b and vim.api.nvim_buf_is_valid(b)
end

--- Per-line meta of the chat buffer at `lnum` (1-based): {row = id, call = id?, change = {path, change}?}
function M.meta_at(lnum)
  return M.meta[lnum]
end

--- Re-render rows from index `idx` to the end.
function M.render_from(idx)
  view.render_from(M, idx)
end

--- (in a coroutine) Re-read the branch from the daemon and render it all.
function M.load()
  local sid = session.id
  local epoch = M.epoch
  local view = client.await("session/view", { session_id = sid, kind = "chat" })
  if M.epoch ~= epoch or sid ~= session.id then
    return -- a turn streamed meanwhile: this read is older than the buffer (the turn's end reloads)
  end
  M.model = model_mod.from_view(view.items)
  M.starts = {}
  M.render_from(1)
  -- the view leaves out node metadata and call arguments/results: they come from the branch's
  -- nodes, read after the chat is on screen
  local nodes = client.await("session/get_branch", { session_id = sid }).nodes or {}
  if M.epoch ~= epoch or sid ~= session.id then
    return
  end
  local first = model_mod.add_details(M.model, nodes)
  -- sub-agents: the branch each spawn_agent call started, inside its fold
  if next(model_mod.spawn_calls(M.model)) then
    local lb = client.await("session/list_branches", { session_id = sid })
    for _, b in ipairs(lb.branches or {}) do
      if b.spawn_root then
        local sub = client.await("session/get_branch", { session_id = sid, head_id = b.head_id }).nodes or {}
        if M.epoch ~= epoch or sid ~= session.id then
          return
        end
        local idx = model_mod.attach_subagent(M.model, sub)
        if idx then
          first = math.min(first or idx, idx)
        end
      end
    end
  end
  if first then
    M.render_from(first)
  end
end

local function schedule_reload()
  if reload_timer then
    reload_timer:stop()
  else
    reload_timer = (vim.uv or vim.loop).new_timer()
  end
  reload_timer:start(50, 0, vim.schedule_wrap(function()
    if valid(M.buf) and not session.running then
      client.run(M.load)
    end
  end))
end

local function on_update(ev)
  if ev.session_id ~= session.id or not valid(M.buf) then
    return
  end
  if ev.kind == "turn_finished" then
    return
  end
  M.epoch = M.epoch + 1
  local idx = model_mod.apply(M.model, ev)
  if idx and not (ev.kind == "text_delta" and view.append_delta(M, idx, ev.delta or "")) then
    M.render_from(idx)
  end
end
M.on_update = on_update

local refusal_ns = vim.api.nvim_create_namespace("sessiondag_refusal")

--- A refused prompt: `why` shown above the prompt line (until the next send) and `text` put back
--- on it, so nothing typed is lost; show_refusal(nil) clears it.
function M.show_refusal(why, text)
  if not valid(M.pbuf) then
    return
  end
  vim.api.nvim_buf_clear_namespace(M.pbuf, refusal_ns, 0, -1)
  if not why then
    return
  end
  local last = vim.api.nvim_buf_line_count(M.pbuf) - 1
  if text and vim.trim(vim.api.nvim_buf_get_lines(M.pbuf, last, last + 1, false)[1] or "") == ">" then
    vim.api.nvim_buf_set_lines(M.pbuf, last, last + 1, false, { "> " .. text:gsub("\n", " ") })
  end
  vim.api.nvim_buf_set_extmark(M.pbuf, refusal_ns, last, 0, {
    virt_lines = { { { "✗ not sent: " .. why, "ErrorMsg" } } }, virt_lines_above = true,
  })
end

--- Send a prompt (from the prompt window); branch_from forks the turn (retry / edited fork).
function M.send(text, branch_from)
  if not text or vim.trim(text) == "" then
    return
  end
  if session.running then
    vim.notify("sessiondag: a turn is running (" .. config.options.keys.cancel .. " cancels it)", vim.log.levels.WARN)
    return
  end
  session.running = true
  local params = { session_id = session.id, content = text, branch_from = branch_from }
  if branch_from and valid(M.buf) then
    -- the forked turn starts a new branch: show its context (up to the fork point) while it streams
    M.epoch = M.epoch + 1 -- reads started before belong to the other branch
    M.model = model_mod.new()
    M.starts = {}
    M.render_from(1)
    local epoch = M.epoch
    client.request("session/view", { session_id = session.id, kind = "chat", head_id = branch_from }, function(_, r)
      if r and M.epoch == epoch then
        M.model = model_mod.from_view(r.items, {})
        M.starts = {}
        M.render_from(1)
      end
    end)
  end
  vim.cmd.redrawstatus()
  M.show_refusal(nil)
  client.request("agent/prompt", params, function(err, res)
    session.running = false
    if err then
      -- refused (nothing ran): the message stays where it was typed, the reason above it
      client.notify_error(err, "prompt")
      M.show_refusal(client.describe(err), text)
    elseif res then
      session.head_id = res.head_id  -- the usage comes with the turn_committed update (session.lua)
      if res.stop_reason == "error" and type(res.error) == "table" then
        vim.notify(("sessiondag: turn failed: %s: %s"):format(res.error.type, res.error.message), vim.log.levels.ERROR)
      elseif res.stop_reason == "cancelled" then
        vim.notify("sessiondag: turn cancelled", vim.log.levels.INFO)
      end
    end
    vim.cmd.redrawstatus()
    if valid(M.buf) then
      client.run(M.load)
    end
  end)
end

function M.cancel()
  if not session.id then
    return
  end
  client.request("agent/cancel", { session_id = session.id }, function(err)
    if err then
      client.notify_error(err, "cancel")
    end
  end)
end

local function line_meta()
  return M.meta[vim.api.nvim_win_get_cursor(0)[1]] or {}
end

--- The model-call node id for the cursor (an llm row), or the latest one.
function M.llm_at_cursor()
  local mt = valid(M.buf) and vim.api.nvim_get_current_buf() == M.buf and line_meta() or {}
  local idx = mt.row and M.model.by_id[mt.row]
  if idx and M.model.rows[idx].role == "llm" then
    return M.model.rows[idx].id
  end
  for i = #M.model.rows, 1, -1 do
    if M.model.rows[i].role == "llm" then
      return M.model.rows[i].id
    end
  end
end

local function map(buf, lhs, fn, desc, mode)
  if lhs then
    vim.keymap.set(mode or "n", lhs, fn, { buffer = buf, desc = "sessiondag: " .. desc, nowait = true })
  end
end

local function make_buffers()
  local keys = config.options.keys
  if not valid(M.buf) then
    M.buf = vim.api.nvim_create_buf(false, true)
    vim.api.nvim_buf_set_name(M.buf, "sessiondag://chat")
    vim.bo[M.buf].filetype = "sessiondag"
    vim.bo[M.buf].modifiable = false
    map(M.buf, keys.cancel, M.cancel, "cancel the running turn")
    map(M.buf, keys.close, M.close, "close the chat")
    map(M.buf, keys.diff, function()
      local mt = line_meta()
      if mt.change then
        require("sessiondag.views").diff(mt.change, session.working_dir)
      end
    end, "diff of the workspace change under the cursor")
    map(M.buf, keys.render, function()
      require("sessiondag.views").render(M.llm_at_cursor())
    end, "messages the model call under the cursor received")
    map(M.buf, keys.refresh, function()
      client.run(M.load)
    end, "reload")
  end
  if not valid(M.pbuf) then
    M.pbuf = vim.api.nvim_create_buf(false, true)
    vim.api.nvim_buf_set_name(M.pbuf, "sessiondag://prompt")
    vim.bo[M.pbuf].buftype = "prompt"
    vim.bo[M.pbuf].filetype = "sessiondag_prompt"
    vim.fn.prompt_setprompt(M.pbuf, "> ")
    vim.fn.prompt_setcallback(M.pbuf, function(text)
      M.send(text)
      vim.schedule(function()
        if valid(M.pbuf) then
          local n = vim.api.nvim_buf_line_count(M.pbuf)
          if n > 1 then
            vim.api.nvim_buf_set_lines(M.pbuf, 0, n - 1, false, {})
          end
        end
      end)
    end)
    map(M.pbuf, keys.cancel, M.cancel, "cancel the running turn", { "n", "i" })
    map(M.pbuf, keys.close, M.close, "close the chat")
  end
end

local function set_win_opts(win)
  local wo = vim.wo[win]
  wo.foldmethod = "manual"
  wo.foldenable = true
  wo.wrap = true
  wo.linebreak = true
  wo.number = false
  wo.relativenumber = false
  wo.signcolumn = "no"
end

local function show()
  local wins = vim.fn.win_findbuf(M.buf)
  if #wins > 0 then
    vim.api.nvim_set_current_win(wins[1])
  else
    local layout = config.options.layout
    if layout == "tab" then
      vim.cmd.tabnew()
    elseif layout == "split" then
      vim.cmd("botright split")
    elseif vim.api.nvim_buf_get_name(0) ~= "" or vim.bo.modified then
      vim.cmd("botright vsplit")
    end
    vim.api.nvim_win_set_buf(0, M.buf)
  end
  set_win_opts(vim.api.nvim_get_current_win())
  if #wins == 0 and valid(M.buf) then -- folds are per window: build them for this one
    view.make_folds(M, view.fold_ranges(M.levels, 0), true)
  end
  if #vim.fn.win_findbuf(M.pbuf) == 0 then
    vim.cmd("belowright " .. config.options.prompt_height .. "split")
    vim.api.nvim_win_set_buf(0, M.pbuf)
    vim.wo.winfixheight = true
    vim.wo.number = false
    vim.wo.signcolumn = "no"
  else
    vim.api.nvim_set_current_win(vim.fn.win_findbuf(M.pbuf)[1])
  end
  vim.cmd.startinsert()
end

--- :Sessiondag chat
function M.open()
  if not hooked then
    hooked = true
    client.on("agent/did_update", on_update)
    session.watch("chat", function(p)
      if valid(M.buf) and not session.running then
        schedule_reload()
      elseif p.changes and p.changes[1] and p.changes[1].kind == "reload" then
        schedule_reload()
      end
    end)
  end
  client.run(function()
    session.ensure()
    make_buffers()
    show()
    M.load()
  end)
end

function M.close()
  for _, b in ipairs({ M.pbuf, M.buf }) do
    if valid(b) then
      for _, w in ipairs(vim.fn.win_findbuf(b)) do
        if #vim.api.nvim_list_wins() > 1 then
          vim.api.nvim_win_close(w, true)
        end
      end
    end
  end
end

return M

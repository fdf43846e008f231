---@mod sessiondag.chat The chat buffer: the current branch, a prompt window, streaming, folds
local client = require("sessiondag.client")
local config = require("sessiondag.config")
local model_mod = require("sessiondag.chat_model")
local session = require("sessiondag.session")

local M = { buf = nil, pbuf = nil, model = model_mod.new(), starts = {}, levels = {}, meta = {}, epoch = 0 }
local ns = vim.api.nvim_create_namespace("sessiondag_chat")
local hooked = false
local reload_timer

local function valid(b)
  return b and vim.api.nvim_buf_is_valid(b)
end

--- Fold ranges {first, last, depth} (1-based buffer lines) of fold levels ("0", ">1", "1", ">2", …)
--- that start at buffer line offset + 1; outer folds first.
function M.fold_ranges(levels, offset)
  local ranges, open = {}, {}
  local function close(k, last)
    if open[k] then
      table.insert(ranges, { open[k], last, k })
      open[k] = nil
    end
  end
  for i, lv in ipairs(levels) do
    local d = tonumber(lv:match("%d+")) or 0
    local starts = lv:sub(1, 1) == ">"
    for k = 9, 1, -1 do
      if k > d or (starts and k == d) then
        close(k, offset + i - 1)
      end
    end
    if starts then
      open[d] = offset + i
    end
  end
  for k = 9, 1, -1 do
    close(k, offset + #levels)
  end
  table.sort(ranges, function(a, b)
    return a[3] < b[3] or (a[3] == b[3] and a[1] < b[1])
  end)
  return ranges
end

-- Manual folds for tool calls and sub-agents (a fold expression would be evaluated for every line
-- on every change: most of the cost of showing a long chat).
local function make_folds(ranges, all)
  for _, win in ipairs(vim.fn.win_findbuf(M.buf)) do
    vim.api.nvim_win_call(win, function()
      if all then
        vim.cmd("silent! normal! zE")
      end
      for _, r in ipairs(ranges) do
        vim.cmd(("%d,%dfold"):format(r[1], r[2]))
        if not config.options.fold_calls then
          vim.cmd(("%dfoldopen"):format(r[1]))
        end
      end
    end)
  end
end

--- Per-line meta of the chat buffer at `lnum` (1-based): {row = id, call = id?, change = {path, change}?}
function M.meta_at(lnum)
  return M.meta[lnum]
end

local function set_lines(first, lines)
  vim.bo[M.buf].modifiable = true
  vim.api.nvim_buf_set_lines(M.buf, first, -1, false, lines)
  vim.bo[M.buf].modifiable = false
end

local function follow(before_count)
  for _, win in ipairs(vim.fn.win_findbuf(M.buf)) do
    local cur = vim.api.nvim_win_get_cursor(win)[1]
    if cur >= before_count - 1 or win ~= vim.api.nvim_get_current_win() then
      pcall(vim.api.nvim_win_set_cursor, win, { vim.api.nvim_buf_line_count(M.buf), 0 })
    end
  end
end

--- Re-render rows from index `idx` to the end (streaming touches the last row only).
function M.render_from(idx)
  if not valid(M.buf) or not idx then
    return
  end
  local before = vim.api.nvim_buf_line_count(M.buf)
  local first = M.starts[idx]
  if first == nil then
    idx, first = 1, 0
  end
  local lines, levels, meta, starts = model_mod.render(M.model, idx)
  for i = #M.levels, first + 1, -1 do
    M.levels[i], M.meta[i] = nil, nil
  end
  for i, l in ipairs(levels) do
    M.levels[first + i] = l
    M.meta[first + i] = meta[i]
  end
  for i = idx, #M.model.rows + 1 do
    M.starts[i] = nil
  end
  for i, s in pairs(starts) do
    M.starts[i] = first + s
  end
  M.starts[#M.model.rows + 1] = first + #lines
  if first == 0 then
    local header = M.header()
    table.insert(lines, 1, header)
    table.insert(M.levels, 1, "0")
    table.insert(M.meta, 1, {})
    for i in pairs(M.starts) do
      M.starts[i] = M.starts[i] + 1
    end
    set_lines(0, lines)
    make_folds(M.fold_ranges(levels, 1), true)
  else
    set_lines(first, lines)
    make_folds(M.fold_ranges(levels, first), false)
  end
  follow(before)
end

function M.header()
  return ("# sessiondag %s  ·  %s%s"):format(session.id or "?", session.working_dir or "",
    session.bound and "" or "  ·  UNBOUND")
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

-- A text delta for the last row (a reply streaming, no calls under it yet) is appended where the
-- text ends, instead of re-rendering the row: the cost stays flat as the reply grows.
local function append_delta(idx, delta)
  local row = M.model.rows[idx]
  local stop = M.starts[idx + 1] -- the line after the row (0-based); the row ends with a blank line
  if idx ~= #M.model.rows or #row.calls > 0 or #(row.changes or {}) > 0 or not stop then
    return false
  end
  local before = vim.api.nvim_buf_line_count(M.buf)
  local last = stop - 2
  local col = #(vim.api.nvim_buf_get_lines(M.buf, last, last + 1, false)[1] or "")
  local parts = vim.split(delta, "\n", { plain = true })
  vim.bo[M.buf].modifiable = true
  vim.api.nvim_buf_set_text(M.buf, last, col, last, col, parts)
  vim.bo[M.buf].modifiable = false
  for _ = 2, #parts do
    table.insert(M.levels, last + 2, "0")
    table.insert(M.meta, last + 2, { row = row.id })
  end
  M.starts[idx + 1] = stop + #parts - 1
  follow(before)
  return true
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
  if idx and not (ev.kind == "text_delta" and append_delta(idx, ev.delta or "")) then
    M.render_from(idx)
  end
end
M.on_update = on_update

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
  client.request("agent/prompt", params, function(err, res)
    session.running = false
    if err then
      client.notify_error(err, "prompt")
    elseif res then
      session.head_id = res.head_id
      local u = res.usage or {}
      session.usage.input_tokens = (session.usage.input_tokens or 0) + (u.input_tokens or 0)
      session.usage.output_tokens = (session.usage.output_tokens or 0) + (u.output_tokens or 0)
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

--- Open the diff of a workspace change: the file against git HEAD (or the file alone outside git).
function M.open_diff(change)
  local wd = session.working_dir or vim.fn.getcwd()
  local file = wd .. "/" .. change.path
  vim.cmd.tabnew()
  local res = vim.system({ "git", "-C", wd, "show", "HEAD:" .. change.path }, { text = true }):wait()
  if change.change ~= "deleted" then
    vim.cmd.edit(vim.fn.fnameescape(file))
  end
  if res.code == 0 then
    if change.change ~= "deleted" then
      vim.cmd.diffthis()
      vim.cmd("leftabove vnew")
    end
    local b = vim.api.nvim_get_current_buf()
    vim.bo[b].buftype = "nofile"
    vim.bo[b].bufhidden = "wipe"
    vim.api.nvim_buf_set_lines(b, 0, -1, false, vim.split(res.stdout, "\n", { plain = true }))
    pcall(vim.api.nvim_buf_set_name, b, "sessiondag://HEAD/" .. change.path)
    vim.bo[b].modifiable = false
    vim.cmd.diffthis()
  elseif change.change == "deleted" then
    vim.notify("sessiondag: " .. change.path .. " was deleted (no git HEAD version to show)", vim.log.levels.INFO)
  end
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
        M.open_diff(mt.change)
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
    make_folds(M.fold_ranges(M.levels, 0), true)
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

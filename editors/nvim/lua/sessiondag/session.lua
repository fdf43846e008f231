---@mod sessiondag.session The session bound to the working directory: open, subscribe, live state
local client = require("sessiondag.client")

local M = {
  id = nil,
  working_dir = nil,
  head_id = nil,
  bound = true,
  running = false, -- a turn this Neovim started is running
  live = {}, -- node id -> true: nodes running anywhere (other clients, `sessiondag run`), from did_change
  usage = { input_tokens = 0, output_tokens = 0 },
  cost = nil, -- the session's cost as the statusline shows it ("$0.0123", "unknown", "$0.01+?"), from session/usage
  prompt_id = nil,
}

--- A usage total (session/usage) as text: dollars when every call has a price, "unknown" when none
--- has, "$X+?" when some have (X: what the priced ones cost).
function M.cost_text(t)
  if type(t) ~= "table" or (t.calls or 0) == 0 then
    return nil
  end
  if type(t.cost_usd) == "number" then
    return ("$%.4f"):format(t.cost_usd)
  end
  if (t.priced_cost_usd or 0) == 0 then
    return "unknown"
  end
  return ("$%.4f+?"):format(t.priced_cost_usd)
end

--- Re-read the session's cost (session/usage) without waiting; redraws the statusline.
function M.refresh_cost()
  local sid = M.id
  if not sid then
    return
  end
  client.request("session/usage", { session_id = sid, by = "model" }, function(err, r)
    if err or sid ~= M.id then
      return
    end
    M.cost = M.cost_text(r.total)
    vim.schedule(function()
      vim.cmd.redrawstatus()
    end)
  end)
end

--- Does a did_change batch record a model call's cost (a call finished)?
local function costs_changed(changes)
  for _, ch in ipairs(changes or {}) do
    local md = type(ch.fields) == "table" and ch.fields.metadata
    if (type(md) == "table" and md["sessiondag.cost"] ~= nil) or ch.kind == "reload" then
      return true
    end
  end
  return false
end

local views = {} -- name -> fn(change) called on session/did_change of the current session
local warned_unbind = {}
local hooked = false

--- Register a view to refresh on session/did_change (and after a reconnect).
function M.watch(name, fn)
  views[name] = fn
end

function M.unwatch(name)
  views[name] = nil
end

local function refresh_views(params)
  for _, fn in pairs(views) do
    pcall(fn, params)
  end
end

local function hook()
  if hooked then
    return
  end
  hooked = true
  client.on("session/did_change", function(p)
    if p.session_id ~= M.id then
      return
    end
    M.head_id = p.head_id or M.head_id
    local before = next(M.live) ~= nil
    for _, ch in ipairs(p.changes or {}) do
      if ch.kind == "append" and type(ch.node) == "table" and ch.node.status == "running" then
        M.live[ch.node.id] = true
      elseif ch.kind == "update" and type(ch.fields) == "table" and ch.fields.status and ch.fields.status ~= "running" then
        M.live[ch.node_id] = nil
      elseif ch.kind == "reload" then
        M.live = {}
      end
    end
    if before ~= (next(M.live) ~= nil) then
      vim.cmd.redrawstatus()
    end
    if costs_changed(p.changes) then
      M.refresh_cost()
    end
    refresh_views(p)
  end)
  -- the usage of every turn of the session, whoever ran it (this chat, the terminal, another
  -- editor): each committed turn's result reaches every subscriber
  client.on("agent/did_update", function(p)
    if p.session_id ~= M.id or p.kind ~= "turn_committed" or type(p.result) ~= "table" then
      return
    end
    local u = p.result.usage or {}
    M.usage.input_tokens = (M.usage.input_tokens or 0) + (u.input_tokens or 0)
    M.usage.output_tokens = (M.usage.output_tokens or 0) + (u.output_tokens or 0)
    vim.cmd.redrawstatus()
  end)
  client.on("session/did_unbind", function(p)
    if p.session_id ~= M.id then
      return
    end
    M.bound = false
    if not warned_unbind[p.session_id] then
      warned_unbind[p.session_id] = true
      vim.notify(("sessiondag: %s is unbound: its working dir %s is gone; new turns are refused until it is back")
        :format(p.session_id, p.working_dir or "?"), vim.log.levels.WARN)
    end
    refresh_views({ session_id = M.id, changes = {} })
    vim.cmd.redrawstatus()
  end)
  client.on("session/did_rebind", function(p)
    if p.session_id == M.id then
      M.bound = true
      warned_unbind[p.session_id] = nil
      vim.cmd.redrawstatus()
    end
  end)
  client.on("connected", function()
    -- after a reconnect: subscribe again and re-read everything
    if M.id and client.generation > 1 then
      client.run(function()
        local r = client.await("session/subscribe", { session_id = M.id })
        M.head_id, M.bound = r.head_id, r.bound ~= false
        M.running = false
        refresh_views({ session_id = M.id, changes = { { kind = "reload" } } })
      end)
    end
  end)
end

local function adopt(handle)
  M.id = handle.session_id
  M.live = {}
  M.working_dir = handle.working_dir
  M.path = handle.path
  M.head_id = handle.head_id
  M.usage = vim.deepcopy(handle.usage_total or M.usage)
  M.cost = nil
  M.refresh_cost()
  -- subscribe without waiting: the views read in parallel (requests on one connection run concurrently)
  client.request("session/subscribe", { session_id = M.id }, function(err, r)
    if err then
      return client.notify_error(err, "subscribe")
    end
    if r.session_id == M.id then
      M.bound = r.bound ~= false
      M.head_id = r.head_id or M.head_id
    end
  end)
  return handle
end

--- (in a coroutine) The session of the current working dir: the newest one recorded for it, or a new one.
function M.ensure()
  hook()
  local cwd = vim.fn.getcwd()
  if M.id and M.working_dir == cwd then
    return M.id
  end
  local list = client.await("session/list", { working_dir = cwd }).sessions or {}
  local best
  for _, s in ipairs(list) do
    if s.readable ~= false and (not best or (s.created_at or 0) > (best.created_at or 0)) then
      best = s
    end
  end
  local params = { working_dir = cwd }
  if best then
    params.session_id = best.session_id
  end
  adopt(client.await("session/open", params))
  return M.id
end

--- (in a coroutine) Switch to another session by id.
function M.switch(id)
  hook()
  if M.id and M.id ~= id then
    pcall(client.await, "session/unsubscribe", { session_id = M.id })
  end
  adopt(client.await("session/open", { session_id = id, working_dir = vim.fn.getcwd(), allow_working_dir_mismatch = true }))
  refresh_views({ session_id = M.id, changes = { { kind = "reload" } } })
end

--- The statusline text: "sd:<id> [unbound] ▶ 1.2k/340 $0.0123" (empty when no session is open).
function M.status()
  if not M.id then
    return ""
  end
  local parts = { "sd:" .. M.id:gsub("^s%-", ""):sub(1, 8) }
  if client.state ~= "connected" then
    table.insert(parts, "[" .. client.state .. "]")
  end
  if not M.bound then
    table.insert(parts, "[unbound]")
  end
  if M.running or next(M.live) then
    table.insert(parts, "▶")
  end
  local function k(n)
    n = n or 0
    return n >= 1000 and ("%.1fk"):format(n / 1000) or tostring(n)
  end
  table.insert(parts, k(M.usage.input_tokens) .. "/" .. k(M.usage.output_tokens))
  if M.cost then
    table.insert(parts, M.cost)
  end
  return table.concat(parts, " ")
end

return M

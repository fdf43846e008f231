---@mod sessiondag.chat_model The chat of one branch as rows, and rows as buffer lines with folds (pure)
---
--- A row is a ROOT-level user message or a model call of the turn:
---   { id, seq, role = "user"|"llm", name, status, text, usage?, calls = { call... }, changes = {...} }
--- A call is a tool call or sub-agent hanging under a row (shown as a fold):
---   { id, name, status, input?, output?, calls = { call... } }
local M = {}

local function is_context(name)
  return type(name) == "string" and name:sub(1, 8) == "context/"
end

local function text_of(v)
  if v == nil or v == vim.NIL then
    return ""
  end
  if type(v) == "string" then
    return v
  end
  if type(v) == "table" then
    if type(v.text) == "string" then
      return v.text
    end
    local parts = {}
    for _, p in ipairs(v) do
      if type(p) == "table" and type(p.text) == "string" then
        table.insert(parts, p.text)
      elseif type(p) == "string" then
        table.insert(parts, p)
      end
    end
    if #parts > 0 then
      return table.concat(parts, "\n")
    end
    return vim.json.encode(v)
  end
  return tostring(v)
end
M.text_of = text_of

function M.new()
  return { rows = {}, by_id = {}, calls = {} }
end

local function changes_of(node)
  local md = node and node.metadata
  local wc = type(md) == "table" and md.workspace_changes
  if type(wc) ~= "table" then
    return {}
  end
  local out = {}
  for _, c in ipairs(wc) do
    if type(c) == "table" and c.path then
      table.insert(out, { path = c.path, change = c.change or "modified" })
    end
  end
  return out
end
M.changes_of = changes_of

--- A row from a view item or a node.
function M.row(src, text, changes)
  return { id = src.id, seq = src.seq, role = src.role, name = src.name, status = src.status, text = text,
           calls = {}, changes = changes }
end

--- Add what the view leaves out from the branch's nodes (session/get_branch): the workspace
--- changes of user rows and the arguments and results of tool calls. Returns the index of the
--- first row that changed (nil: none).
function M.add_details(m, nodes)
  local first
  local function changed(idx)
    if idx then
      first = math.min(first or idx, idx)
    end
  end
  for _, n in ipairs(nodes or {}) do
    local idx = n.role == "user" and m.by_id[n.id]
    if idx then
      local ch = changes_of(n)
      if #ch > 0 and not vim.deep_equal(ch, m.rows[idx].changes) then
        m.rows[idx].changes = ch
        changed(idx)
      end
    end
    local call = m.calls[n.id]
    if call and call.input == nil and call.output == nil then
      call.input, call.output = n.input, n.output
      changed(call.row_index)
    end
  end
  return first
end

--- The spawn_agent calls of the chat by id (their sub-agent branches can be attached).
function M.spawn_calls(m)
  local out = {}
  for _, row in ipairs(m.rows) do
    for _, c in ipairs(row.calls) do
      if c.name == "spawn_agent" then
        out[c.id] = c
      end
    end
  end
  return out
end

--- Put a sub-agent's branch (session/get_branch of the spawn branch: its task, model calls and
--- tool calls) inside the spawn_agent call that started it; returns that call's row index.
function M.attach_subagent(m, nodes)
  local first = nodes[1]
  local call = first and m.calls[first.caller]
  if not call then
    return nil
  end
  call.calls = {}
  for _, n in ipairs(nodes) do
    if not is_context(n.name) then
      local sub = { id = n.id, name = n.name, role = n.role, status = n.status, input = n.input,
                    output = n.role ~= "code" and text_of(n.output) or n.output, calls = {},
                    row_index = call.row_index }
      table.insert(call.calls, sub)
      m.calls[n.id] = sub
    end
  end
  return call.row_index
end

--- Build from `session/view {kind = "chat"}` items; `nodes` (optional, from session/get_branch)
--- adds what the view leaves out (workspace changes of user rows).
function M.from_view(items, nodes)
  local m = M.new()
  for _, it in ipairs(items or {}) do
    local row = M.row(it, it.text or "", {})
    row.usage, row.compacted, row.summary = it.usage, it.compacted, it.covers_ids ~= nil
    for _, c in ipairs(it.calls or {}) do
      local call = { id = c.id, name = c.name, status = c.status, calls = {}, row_index = #m.rows + 1 }
      table.insert(row.calls, call)
      m.calls[c.id] = call
    end
    table.insert(m.rows, row)
    m.by_id[row.id] = #m.rows
  end
  M.add_details(m, nodes)
  return m
end

local function new_row(m, node)
  local row = M.row(node, node.role == "user" and text_of(node.output) or "", changes_of(node))
  table.insert(m.rows, row)
  m.by_id[row.id] = #m.rows
  return #m.rows
end

local function owner_of(m, node)
  -- the row or call this node hangs under (by caller edge); a tool call of the latest model call
  -- otherwise.
  local idx = m.by_id[node.caller]
  if idx then
    return idx, m.rows[idx]
  end
  local call = m.calls[node.caller]
  if call then
    return call.row_index, call
  end
  return nil
end

local function add_call(m, node)
  if m.calls[node.id] then
    return M.update_node(m, node)
  end
  local idx, parent = owner_of(m, node)
  if not parent then
    return nil
  end
  local call = {
    id = node.id,
    name = node.name,
    status = node.status,
    role = node.role,
    input = node.input,
    output = node.output,
    calls = {},
    row_index = idx,
  }
  table.insert(parent.calls, call)
  m.calls[node.id] = call
  return idx
end

--- Apply one node update (node_updated, or a did_change update); returns the changed row index.
function M.update_node(m, node)
  local idx = m.by_id[node.id]
  if idx then
    local row = m.rows[idx]
    row.status = node.status or row.status
    if node.output ~= nil and node.output ~= vim.NIL then
      row.text = text_of(node.output)
    end
    if node.metadata then
      local ch = changes_of(node)
      if #ch > 0 then
        row.changes = ch
      end
    end
    return idx
  end
  local call = m.calls[node.id]
  if call then
    call.status = node.status or call.status
    if node.input ~= nil then
      call.input = node.input
    end
    if node.output ~= nil then
      call.output = node.output
    end
    return call.row_index
  end
  return nil
end

--- Apply one agent/did_update; returns the index of the first row that changed (nil: none).
function M.apply(m, ev)
  local kind = ev.kind
  if kind == "text_delta" then
    local idx = m.by_id[ev.node_id]
    if idx then
      local row = m.rows[idx]
      row.text = row.text .. (ev.delta or "")
      return idx
    end
    return nil
  end
  local node = ev.node
  if kind == "node_appended" or kind == "tool_call" then
    if not node or is_context(node.name) then
      return nil
    end
    if m.by_id[node.id] then
      return M.update_node(m, node)
    end
    if node.role == "user" and node.caller == "ROOT" then
      return new_row(m, node)
    end
    if node.role == "llm" then
      local idx = m.by_id[node.caller]
      if idx and m.rows[idx].role == "user" then
        return new_row(m, node)
      end
    end
    return add_call(m, node)
  end
  if kind == "node_updated" and node then
    return M.update_node(m, node)
  end
  return nil
end

local STATUS = { running = "running…", error = "error", cancelled = "cancelled", completed = "" }

local function short_json(v, max)
  if v == nil or v == vim.NIL then
    return ""
  end
  local s = type(v) == "string" and v or vim.json.encode(v)
  s = s:gsub("\n", " ⏎ ")
  if #s > max then
    s = s:sub(1, max) .. "…"
  end
  return s
end

local LABEL = { user = "user", llm = "model", code = "tool" }

local function call_lines(call, depth, lines, levels, meta, row_id)
  local indent = string.rep("  ", depth)
  local st = STATUS[call.status] or call.status or ""
  local label = call.name == "spawn_agent" and "sub-agent" or LABEL[call.role] or "tool"
  table.insert(lines, ("%s▸ %s %s%s"):format(indent, label, call.name or "?", st ~= "" and (" · " .. st) or ""))
  table.insert(levels, ">" .. depth)
  table.insert(meta, { row = row_id, call = call.id })
  local body = {}
  if call.input ~= nil and call.input ~= vim.NIL then
    table.insert(body, "in:  " .. short_json(call.input, 200))
  end
  if call.output ~= nil and call.output ~= vim.NIL then
    table.insert(body, "out: " .. short_json(call.output, 200))
  end
  if #body == 0 then
    table.insert(body, "id " .. call.id)
  end
  for _, b in ipairs(body) do
    table.insert(lines, indent .. "  " .. b)
    table.insert(levels, tostring(depth))
    table.insert(meta, { row = row_id, call = call.id })
  end
  for _, sub in ipairs(call.calls or {}) do
    call_lines(sub, depth + 1, lines, levels, meta, row_id)
  end
end

local function split_lines(text, lines, levels, meta, mt)
  local n = #lines
  local pos = 1
  while true do
    local nl = text:find("\n", pos, true)
    n = n + 1
    lines[n] = text:sub(pos, (nl or 0) - 1)
    levels[n] = "0"
    meta[n] = mt
    if not nl then
      return
    end
    pos = nl + 1
  end
end

--- Lines, fold levels (foldexpr values) and per-line meta of one row, appended to the given lists
--- (new lists when none are given).
function M.render_row(row, lines, levels, meta)
  lines, levels, meta = lines or {}, levels or {}, meta or {}
  local mt = { row = row.id }
  local st = STATUS[row.status] or row.status or ""
  local who
  if row.summary then
    who = "Summary"
  elseif row.role == "user" then
    who = "You"
  else
    who = "Assistant (" .. (row.name or "model") .. ")"
  end
  local n = #lines + 1
  lines[n] = "## " .. who .. (st ~= "" and (" · " .. st) or "") .. (row.compacted and " · compacted" or "")
  levels[n], meta[n] = "0", mt
  split_lines(row.text or "", lines, levels, meta, mt)
  for _, call in ipairs(row.calls) do
    call_lines(call, 1, lines, levels, meta, row.id)
  end
  for _, ch in ipairs(row.changes or {}) do
    n = #lines + 1
    lines[n] = ("  ✎ %s %s"):format(ch.change, ch.path)
    levels[n], meta[n] = "0", { row = row.id, change = ch }
  end
  n = #lines + 1
  lines[n], levels[n], meta[n] = "", "0", mt
  return lines, levels, meta
end

--- All rows: lines, levels, meta and the first line (0-based) of every row.
function M.render(m, from)
  local lines, levels, meta, starts = {}, {}, {}, {}
  for i = from or 1, #m.rows do
    starts[i] = #lines
    M.render_row(m.rows[i], lines, levels, meta)
  end
  return lines, levels, meta, starts
end

return M

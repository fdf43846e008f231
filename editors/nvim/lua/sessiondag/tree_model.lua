---@mod sessiondag.tree_model Branches of a session as a tree of forks and turns (pure)
---
--- Input: `branches` from session/list_branches and `chains[head_id]` = that branch's nodes from
--- session/get_branch (branch start → head). Output: entries in display order:
---   { kind = "branch", branch = {...}, depth, fork_at = node id?, parent = head id? }
---   { kind = "turn", head_id, node = user node, depth, status, covers = {ids of the chain through this turn} }
local M = {}

local function is_turn(n)
  return n.role == "user" and n.caller == "ROOT"
end

local function text_of(v)
  return require("sessiondag.chat_model").text_of(v)
end

--- Where `chain` leaves the placed chains: parent head, index of the last shared node.
local function fork_point(chain, placed, index_of)
  -- spawn branches: the parent is the branch whose chain holds the spawn root's caller
  local first = chain[1]
  if first and first.caller ~= "ROOT" then
    for _, p in ipairs(placed) do
      if index_of[p.head_id][first.caller] then
        return p.head_id, nil, first.caller
      end
    end
  end
  local best, best_k = nil, 0
  for _, p in ipairs(placed) do
    local idx = index_of[p.head_id]
    local k = 0
    while chain[k + 1] and idx[chain[k + 1].id] == k + 1 do
      k = k + 1
    end
    if k > best_k then
      best, best_k = p.head_id, k
    end
  end
  return best, best_k, best_k > 0 and chain[best_k].id or nil
end

function M.build(branches, chains)
  local order = vim.deepcopy(branches)
  table.sort(order, function(a, b)
    if a.main ~= b.main then
      return a.main
    end
    return (a.seq or 0) < (b.seq or 0)
  end)
  local index_of, placed = {}, {}
  local kids = {} -- parent head -> fork node id -> { branch, ... }
  local roots = {}
  local shared = {} -- head -> number of leading nodes shared with the parent
  for _, b in ipairs(order) do
    local chain = chains[b.head_id] or {}
    local idx = {}
    for i, n in ipairs(chain) do
      idx[n.id] = i
    end
    index_of[b.head_id] = idx
    local parent, k, at = nil, 0, nil
    if #placed > 0 then
      parent, k, at = fork_point(chain, placed, index_of)
    end
    shared[b.head_id] = k or 0
    if parent then
      kids[parent] = kids[parent] or {}
      kids[parent][at] = kids[parent][at] or {}
      table.insert(kids[parent][at], { branch = b, fork_at = at })
    else
      table.insert(roots, { branch = b })
    end
    table.insert(placed, b)
  end
  local out = {}
  local function emit(item, depth, parent)
    local b = item.branch
    table.insert(out, { kind = "branch", branch = b, depth = depth, fork_at = item.fork_at, parent = parent })
    local chain = chains[b.head_id] or {}
    local first_turn
    for i = 1, #chain do
      if is_turn(chain[i]) then
        first_turn = first_turn or i
      end
    end
    local turn_entry
    for i = (shared[b.head_id] or 0) + 1, #chain do
      local n = chain[i]
      if is_turn(n) then
        turn_entry = { kind = "turn", head_id = b.head_id, node = n, depth = depth + 1, status = n.status,
                       text = text_of(n.output), covers = {} }
        table.insert(out, turn_entry)
      end
      if turn_entry then
        turn_entry.status = n.status
        -- the contiguous chain from the branch's first turn through this one (for compaction)
        turn_entry.covers = {}
        for j = first_turn or i, i do
          table.insert(turn_entry.covers, chain[j].id)
        end
      end
      for _, child in ipairs((kids[b.head_id] or {})[n.id] or {}) do
        emit(child, depth + 1, b.head_id)
      end
    end
    -- children forked at a shared node before this branch's own part (rare: siblings)
    for at, list in pairs(kids[b.head_id] or {}) do
      local i = index_of[b.head_id][at]
      if i and i <= (shared[b.head_id] or 0) then
        for _, child in ipairs(list) do
          emit(child, depth + 1, b.head_id)
        end
      end
    end
  end
  for _, r in ipairs(roots) do
    emit(r, 0, nil)
  end
  return out
end

local ICON = { completed = "✓", error = "✗", running = "…", cancelled = "⊘" }

--- One display line per entry.
function M.lines(entries, costs)
  local lines = {}
  costs = costs or {}
  for _, e in ipairs(entries) do
    local pad = string.rep("  ", e.depth)
    if e.kind == "branch" then
      local b = e.branch
      -- the daemon's label (session/list_branches, what `sessions branches` prints): the name, the first
      -- differing message, "retry of turn N (…)", "failed try of turn N (…)"
      local label = b.label or b.name or (b.main and "main") or (b.spawn_root and "sub-agent") or "branch"
      if b.main and b.name then
        label = b.name .. " (main)"
      end
      local from = b.from_turn ~= nil and b.from_turn ~= vim.NIL
        and ("  " .. (b.from_turn == 0 and "from the start" or ("from turn " .. b.from_turn))) or ""
      local cost = costs[b.head_id]
      table.insert(lines, ("%s%s %s%s  %s%s  %s%s"):format(pad, b.current and "●" or "○", label,
        b.spawn_root and " (spawn)" or "", b.status, from, b.head_id:sub(1, 8), cost and ("  " .. cost) or ""))
    else
      local first = vim.split(e.text or "", "\n", { plain = true })[1] or ""
      if #first > 72 then
        first = first:sub(1, 72) .. "…"
      end
      table.insert(lines, ("%s%s #%d %s"):format(pad, ICON[e.status] or "·", e.node.seq or 0, first))
    end
  end
  return lines
end

return M

---@mod sessiondag.chat_view The chat buffer's lines and folds: full and partial renders, streamed deltas
---
--- `C` is the chat's state (sessiondag.chat): buf, model, starts (first line of every row, 0-based,
--- plus an end sentinel), levels and meta (per buffer line, 1-based).
local config = require("sessiondag.config")
local model_mod = require("sessiondag.chat_model")
local session = require("sessiondag.session")

local V = {}

--- Fold ranges {first, last, depth} (1-based buffer lines) of fold levels ("0", ">1", "1", ">2", …)
--- that start at buffer line offset + 1; outer folds first.
function V.fold_ranges(levels, offset)
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
function V.make_folds(C, ranges, all)
  for _, win in ipairs(vim.fn.win_findbuf(C.buf)) do
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

local function set_lines(C, first, lines)
  vim.bo[C.buf].modifiable = true
  vim.api.nvim_buf_set_lines(C.buf, first, -1, false, lines)
  vim.bo[C.buf].modifiable = false
end

local function follow(C, before_count)
  for _, win in ipairs(vim.fn.win_findbuf(C.buf)) do
    local cur = vim.api.nvim_win_get_cursor(win)[1]
    if cur >= before_count - 1 or win ~= vim.api.nvim_get_current_win() then
      pcall(vim.api.nvim_win_set_cursor, win, { vim.api.nvim_buf_line_count(C.buf), 0 })
    end
  end
end

--- Re-render rows from index `idx` to the end (streaming touches the last row only).
function V.render_from(C, idx)
  if not (C.buf and vim.api.nvim_buf_is_valid(C.buf)) or not idx then
    return
  end
  local before = vim.api.nvim_buf_line_count(C.buf)
  local first = C.starts[idx]
  if first == nil then
    idx, first = 1, 0
  end
  local lines, levels, meta, starts = model_mod.render(C.model, idx)
  for i = #C.levels, first + 1, -1 do
    C.levels[i], C.meta[i] = nil, nil
  end
  for i, l in ipairs(levels) do
    C.levels[first + i] = l
    C.meta[first + i] = meta[i]
  end
  for i = idx, #C.model.rows + 1 do
    C.starts[i] = nil
  end
  for i, s in pairs(starts) do
    C.starts[i] = first + s
  end
  C.starts[#C.model.rows + 1] = first + #lines
  if first == 0 then
    local header = V.header()
    table.insert(lines, 1, header)
    table.insert(C.levels, 1, "0")
    table.insert(C.meta, 1, {})
    for i in pairs(C.starts) do
      C.starts[i] = C.starts[i] + 1
    end
    set_lines(C, 0, lines)
    V.make_folds(C, V.fold_ranges(levels, 1), true)
  else
    set_lines(C, first, lines)
    V.make_folds(C, V.fold_ranges(levels, first), false)
  end
  follow(C, before)
end

function V.header()
  return ("# sessiondag %s  ·  %s%s"):format(session.id or "?", session.working_dir or "",
    session.bound and "" or "  ·  UNBOUND")
end

-- A text delta for the last row (a reply streaming, no calls under it yet) is appended where the
-- text ends, instead of re-rendering the row: the cost stays flat as the reply grows.
function V.append_delta(C, idx, delta)
  local row = C.model.rows[idx]
  local stop = C.starts[idx + 1] -- the line after the row (0-based); the row ends with a blank line
  if idx ~= #C.model.rows or #row.calls > 0 or #(row.changes or {}) > 0 or not stop then
    return false
  end
  local before = vim.api.nvim_buf_line_count(C.buf)
  local last = stop - 2
  local col = #(vim.api.nvim_buf_get_lines(C.buf, last, last + 1, false)[1] or "")
  local parts = vim.split(delta, "\n", { plain = true })
  vim.bo[C.buf].modifiable = true
  vim.api.nvim_buf_set_text(C.buf, last, col, last, col, parts)
  vim.bo[C.buf].modifiable = false
  for _ = 2, #parts do
    table.insert(C.levels, last + 2, "0")
    table.insert(C.meta, last + 2, { row = row.id })
  end
  C.starts[idx + 1] = stop + #parts - 1
  follow(C, before)
  return true
end

return V

---@mod sessiondag.json Indented JSON for scratch buffers (pure): chat-message keys first, the rest sorted
local M = {}

local FIRST = { role = 1, content = 2, name = 3, tool_calls = 4, tool_call_id = 5, type = 6, id = 7, ["function"] = 8 }

local function keys_of(t)
  local ks = vim.tbl_keys(t)
  table.sort(ks, function(a, b)
    local pa, pb = FIRST[a] or 100, FIRST[b] or 100
    if pa ~= pb then
      return pa < pb
    end
    return tostring(a) < tostring(b)
  end)
  return ks
end

local function is_list(t)
  if getmetatable(t) == getmetatable(vim.empty_dict()) and next(t) == nil then
    return false
  end
  return vim.islist(t)
end

local function enc(v, indent, out)
  local tv = type(v)
  if v == nil or v == vim.NIL then
    table.insert(out, "null")
  elseif tv == "table" then
    local pad = string.rep("  ", indent + 1)
    if next(v) == nil then
      table.insert(out, is_list(v) and "[]" or "{}")
    elseif is_list(v) then
      table.insert(out, "[\n")
      for i, x in ipairs(v) do
        table.insert(out, pad)
        enc(x, indent + 1, out)
        table.insert(out, i < #v and ",\n" or "\n")
      end
      table.insert(out, string.rep("  ", indent) .. "]")
    else
      table.insert(out, "{\n")
      local ks = keys_of(v)
      for i, k in ipairs(ks) do
        table.insert(out, pad .. vim.json.encode(tostring(k)) .. ": ")
        enc(v[k], indent + 1, out)
        table.insert(out, i < #ks and ",\n" or "\n")
      end
      table.insert(out, string.rep("  ", indent) .. "}")
    end
  else
    table.insert(out, vim.json.encode(v))
  end
end

--- Indented JSON text of a decoded value.
function M.pretty(v)
  local out = {}
  enc(v, 0, out)
  return table.concat(out)
end

return M

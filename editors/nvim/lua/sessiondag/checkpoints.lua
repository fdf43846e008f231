---@mod sessiondag.checkpoints :Sessiondag restore / :Sessiondag diff — the workspace checkpoints
--- every turn records (the daemon's docs/checkpoints.md).
local client = require("sessiondag.client")
local session = require("sessiondag.session")
local ui = require("sessiondag.ui")

local M = {}

local FLAGS = { ["--files"] = "what", ["--conversation"] = "what", ["--both"] = "what", ["--dry-run"] = "dry_run",
                ["--force"] = "force", ["--undo"] = "undo" }

--- {node?, what?, dry_run?, force?, undo?} from :Sessiondag restore's arguments.
function M.parse(fargs)
  local out = {}
  for _, a in ipairs(fargs) do
    local key = FLAGS[a]
    if key == "what" then
      out.what = a:sub(3)
    elseif key then
      out[key] = true
    elseif a:sub(1, 2) == "--" then
      error({ kind = "usage", message = "unknown flag " .. a .. " (--files --conversation --both --dry-run --force --undo)" }, 0)
    else
      out.node = a
    end
  end
  return out
end

--- The node a command means when none is given: the answer under the cursor in the chat, else HEAD.
local function default_node()
  local chat = package.loaded["sessiondag.chat"]
  return (chat and chat.llm_at_cursor()) or session.head_id
end

local function summary(res)
  local files = res.files or {}
  local n, lines = 0, {}
  for _, c in ipairs(files.changes or {}) do
    if c.change ~= "skipped" then
      n = n + 1
    end
    table.insert(lines, ("%-7s %s%s"):format(c.change, c.path, c.why and ("  (" .. c.why .. ")") or ""))
  end
  return n, lines
end

local VERBS = { create = "add", write = "overwrite", delete = "delete", mode = "change the mode of" }

--- (in a coroutine) A dry run first; the question lists each file the restore will add, overwrite or
--- delete (and the files changed since the last snapshot, which the undo point keeps). True to go on
--- (params.force set when files changed since the last snapshot: the user saw them).
local function confirmed(params)
  local plan = client.await("session/restore", vim.tbl_extend("force", params, { dry_run = true })).files or {}
  local lines = {}
  for _, c in ipairs(plan.changes or {}) do
    if c.change ~= "skipped" then
      table.insert(lines, ("  %s %s"):format(VERBS[c.change] or c.change, c.path))
    end
  end
  if #lines == 0 then
    vim.notify(("sessiondag: the files are already as at %s"):format(params.node_id:sub(1, 12)), vim.log.levels.INFO)
    return false
  end
  local dirty = plan.dirty or {}
  local prompt = ("sessiondag: restore %d file(s) to %s?\n%s%s"):format(#lines, params.node_id:sub(1, 12),
    table.concat(lines, "\n"), #dirty > 0 and ("\nchanged since the last snapshot (the undo point keeps them): "
    .. table.concat(dirty, ", ")) or "")
  if not ui.confirm("Restore", prompt, "sessiondag.restore_plan") then
    vim.notify("sessiondag: restore cancelled", vim.log.levels.INFO)
    return false
  end
  params.force = params.force or (#dirty > 0 or nil)
  return true
end

--- :Sessiondag restore [NODE] [--files|--conversation|--both] [--dry-run] [--force] [--undo]
function M.restore(fargs)
  client.run(function()
    session.ensure()
    local a = M.parse(fargs or {})
    local params = { session_id = session.id, what = a.what or "files", dry_run = a.dry_run or nil,
                     force = a.force or nil, undo = a.undo or nil }
    if not a.undo then
      params.node_id = a.node or default_node()
    end
    if not a.undo and not a.dry_run and params.what ~= "conversation" and not confirmed(params) then
      return
    end
    local res = ui.await_or_ask("session/restore", params, {
      refused = "workspace_dirty", flag = "force", yes = "Restore anyway (the undo point keeps them)",
      kind = "sessiondag.restore",
      prompt = function(err)
        return "sessiondag: files changed since the last snapshot: " .. table.concat(err.data.paths or {}, ", ")
      end,
    })
    if not res then
      vim.notify("sessiondag: restore cancelled", vim.log.levels.INFO)
      return
    end
    M.last = res
    local n, lines = summary(res)
    local verb = res.dry_run and "would change" or "restored"
    vim.notify(("sessiondag: %s %d file(s)%s"):format(verb, n, #lines > 0 and (":\n" .. table.concat(lines, "\n")) or ""),
      vim.log.levels.INFO)
    if not res.dry_run then
      vim.cmd("checktime") -- buffers of restored files reload
    end
  end)
end

local function scratch_side(name, text)
  local b = vim.api.nvim_get_current_buf()
  vim.bo[b].buftype = "nofile"
  vim.bo[b].bufhidden = "wipe"
  vim.api.nvim_buf_set_lines(b, 0, -1, false, vim.split(text or "", "\n", { plain = true }))
  pcall(vim.api.nvim_buf_set_name, b, name)
  vim.bo[b].modifiable = false
end

--- One tab per changed text file: the `from` version on the left, the `to` version (the file
--- itself when `to` is the working dir now) on the right, in diff mode.
local function show(res)
  local wd = session.working_dir or vim.fn.getcwd()
  local other = {}
  for _, f in ipairs(res.files) do
    if f.old_text ~= nil or f.new_text ~= nil then
      vim.cmd.tabnew()
      if res.to == "current" and f.change ~= "deleted" then
        vim.cmd.edit(vim.fn.fnameescape(wd .. "/" .. f.path))
      else
        scratch_side(("sessiondag://%s/%s"):format(res.to:sub(1, 12), f.path), f.new_text)
      end
      vim.cmd.diffthis()
      vim.cmd("leftabove vnew")
      scratch_side(("sessiondag://%s/%s"):format(res.from:sub(1, 12), f.path), f.old_text)
      vim.cmd.diffthis()
    else
      table.insert(other, ("%-8s %s (%s)"):format(f.change, f.path, f.binary and "binary"
        or f.too_big and "too big to show" or f.not_stored and "over the size limit, not stored"
        or ("mode " .. tostring(f.old_mode) .. " -> " .. tostring(f.new_mode))))
    end
  end
  if #other > 0 then
    vim.notify("sessiondag: also changed:\n" .. table.concat(other, "\n"), vim.log.levels.INFO)
  end
end

--- :Sessiondag diff [FROM] [TO] — FROM: the node under the cursor or HEAD; TO: "current" (the files now).
function M.diff(fargs)
  client.run(function()
    session.ensure()
    fargs = fargs or {}
    local from = fargs[1] or default_node()
    local to = fargs[2] or "current"
    local res = client.await("session/diff", { session_id = session.id, from = from, to = to, texts = true })
    M.last_diff = res
    if #res.files == 0 then
      vim.notify(("sessiondag: no file differs between %s and %s"):format(from:sub(1, 12), to:sub(1, 12)),
        vim.log.levels.INFO)
      return
    end
    show(res)
  end)
end

return M

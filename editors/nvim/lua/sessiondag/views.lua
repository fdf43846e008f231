---@mod sessiondag.views Scratch views: sessions picker, rendered messages, git log
local client = require("sessiondag.client")
local session = require("sessiondag.session")
local ui = require("sessiondag.ui")

local M = {}

-- vim.lsp.rpc decodes JSON null in objects as a missing key; a render manifest needs these keys
-- present (null included) to be replayed, as the daemon's context/aging.py MANIFEST_REQUIRED says.
local MANIFEST_NULLABLE = { "summary", "frame", "head_id", "policy_version", "aged_before_seq", "max_result_chars",
                            "expose_default", "last_seq" }

function M.restore_manifest(m)
  local out = vim.deepcopy(m)
  for _, k in ipairs(MANIFEST_NULLABLE) do
    if out[k] == nil then
      out[k] = vim.NIL
    end
  end
  return out
end

--- A scratch buffer in a new split named `name` with `lines`.
function M.scratch(name, lines, filetype, reload)
  local existing = vim.fn.bufnr(name)
  local buf = existing ~= -1 and existing or vim.api.nvim_create_buf(false, true)
  if existing == -1 then
    vim.api.nvim_buf_set_name(buf, name)
    vim.bo[buf].bufhidden = "wipe"
  end
  vim.bo[buf].modifiable = true
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
  vim.bo[buf].filetype = filetype
  vim.keymap.set("n", "q", "<cmd>close<cr>", { buffer = buf, desc = "sessiondag: close", nowait = true })
  if reload then
    vim.keymap.set("n", "R", reload, { buffer = buf, desc = "sessiondag: reload", nowait = true })
  end
  if #vim.fn.win_findbuf(buf) == 0 then
    vim.cmd("botright split")
    vim.api.nvim_win_set_buf(0, buf)
  end
  return buf
end

--- :Sessiondag sessions — pick one of this directory's sessions.
function M.sessions()
  client.run(function()
    local cwd = vim.fn.getcwd()
    local list = client.await("session/list", { working_dir = cwd }).sessions or {}
    table.sort(list, function(a, b)
      return (a.created_at or 0) > (b.created_at or 0)
    end)
    if #list == 0 then
      vim.notify("sessiondag: no session for " .. cwd .. " yet (:Sessiondag chat starts one)", vim.log.levels.INFO)
      return
    end
    local choice = ui.pick(list, {
      prompt = "sessiondag sessions in " .. cwd,
      kind = "sessiondag.session",
      format_item = function(s)
        local when = s.created_at and os.date("%Y-%m-%d %H:%M", math.floor(s.created_at)) or "?"
        return ("%s  %s  %s%s%s"):format(s.title or "(no message yet)", when, s.session_id,
          s.session_id == session.id and "  (current)" or "", s.readable == false and "  (unreadable)" or "")
      end,
    })
    if choice then
      session.switch(choice.session_id)
      local chat = require("sessiondag.chat")
      if chat.buf and vim.api.nvim_buf_is_valid(chat.buf) then
        chat.load()
      else
        chat.open()
      end
    end
  end)
end

--- :Sessiondag render — the exact messages a model call received (its recorded render manifest),
--- or the branch as it would render now.
function M.render(llm_id)
  client.run(function()
    require("sessiondag.session").ensure()
    local params = { session_id = session.id }
    local title = "head"
    if llm_id then
      local node = client.await("session/get_node", { session_id = session.id, node_id = llm_id }).node
      local manifest = type(node.metadata) == "table" and node.metadata.render_manifest
      if manifest then
        params.manifest = M.restore_manifest(manifest)
        title = llm_id
      end
    end
    local r = client.await("session/render", params)
    local lines = vim.split(require("sessiondag.json").pretty(r.messages), "\n", { plain = true })
    M.scratch("sessiondag://render/" .. title, lines, "json")
  end)
end

--- :Sessiondag log — the session's git log (one commit per turn).
function M.log()
  client.run(function()
    require("sessiondag.session").ensure()
    local gitdir = session.path .. "/git"
    local res = client.suspend(function(done)
      vim.system({ "git", "--git-dir", gitdir, "log", "--stat", "--date=iso" }, { text = true }, done)
    end)
    if res.code ~= 0 then
      error({ kind = "git", message = vim.trim(res.stderr or "") }, 0)
    end
    M.scratch("sessiondag://log/" .. session.id, vim.split(res.stdout, "\n", { plain = true }), "git", M.log)
  end)
end

--- Open the diff of a workspace change: the file against git HEAD (or the file alone outside git).
function M.diff(change, working_dir)
  local wd = working_dir or vim.fn.getcwd()
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

return M

---@mod sessiondag.sync :Sessiondag push / pull / clone — sessions through a git remote (the daemon's
--- docs/sync.md), as `sessiondag sync push|pull|clone` do them.
local client = require("sessiondag.client")
local session = require("sessiondag.session")
local ui = require("sessiondag.ui")

local M = {}

local URL_ITEM = "enter a git URL…"

--- (in a coroutine) REMOTE given, else one of `sessiondag sync remote add`'s (default first), else a typed URL.
function M.remote(given, title)
  if given and given ~= "" then
    return given
  end
  local remotes = client.await("remote/list", vim.empty_dict()).remotes or {}
  table.sort(remotes, function(a, b)
    return a.default and not b.default
  end)
  local choice = URL_ITEM
  if #remotes > 0 then
    local items = vim.list_extend(vim.deepcopy(remotes), { URL_ITEM })
    local picked = ui.pick(items, {
      prompt = title,
      kind = "sessiondag.remote",
      format_item = function(r)
        return type(r) == "string" and r or (r.name .. "  " .. r.url .. (r.default and "  (default)" or ""))
      end,
    })
    if picked == nil then
      return nil
    end
    choice = type(picked) == "string" and picked or picked.name
  end
  if choice ~= URL_ITEM then
    return choice
  end
  local url = ui.input({ prompt = title .. " (git URL): ", kind = "sessiondag.remote_url" })
  return url and vim.trim(url) ~= "" and vim.trim(url) or nil
end

local function size(n)
  if n < 1024 then
    return n .. " B"
  elseif n < 1048576 then
    return ("%.1f KiB"):format(n / 1024)
  end
  return ("%.1f MiB"):format(n / 1048576)
end

--- `fn(remote)` in a coroutine (client.run), with the remote to `verb` the current session with
--- (push, pull): the command's REMOTE, else one picked (M.remote); nothing when none was picked.
local function pick_remote(fargs, verb, fn)
  client.run(function()
    session.ensure()
    local remote = M.remote((fargs or {})[1], verb .. " session " .. session.id)
    if remote then
      fn(remote)
    end
  end)
end

--- :Sessiondag push [REMOTE] — share the current session (session/push). A value that looks like a
--- credential is refused by the daemon, naming node and field; pushed only when confirmed.
function M.push(fargs)
  pick_remote(fargs, "share", function(remote)
    local res = ui.await_or_ask("session/push", { session_id = session.id, remote = remote }, {
      refused = "secret_in_session", flag = "allow_secrets", yes = "Push anyway",
      prompt = function(err)
        return ("%s. Push anyway?"):format(err.message)
      end,
    })
    if not res then
      return
    end
    if res.status == "up_to_date" then
      vim.notify(("sessiondag: %s already has session %s"):format(remote, session.id), vim.log.levels.INFO)
    else
      vim.notify(("sessiondag: pushed session %s to %s (%d objects, %s)"):format(session.id, remote, res.objects,
        size(res.bytes)), vim.log.levels.INFO)
    end
  end)
end

--- :Sessiondag pull [REMOTE] — the other machine's turns of the current session, merged in (session/pull).
function M.pull(fargs)
  pick_remote(fargs, "pull", function(remote)
    local res = client.await("session/pull", { session_id = session.id, remote = remote, working_dir = vim.fn.getcwd() })
    if res.status == "up_to_date" then
      vim.notify(("sessiondag: session %s is up to date with %s"):format(session.id, remote), vim.log.levels.INFO)
    else
      vim.notify(("sessiondag: pulled session %s from %s (%s%s)"):format(session.id, remote, res.status,
        res.added and res.added > 0 and (", " .. res.added .. " new nodes") or ""), vim.log.levels.INFO)
    end
  end)
end

--- :Sessiondag clone [REMOTE] [ID] — open a session from a remote (remote/list, then session/pull: cloned
--- here, bound to the current dir when it is the same project) and switch to it.
function M.clone(fargs)
  client.run(function()
    fargs = fargs or {}
    local remote = M.remote(fargs[1], "open a session from")
    if not remote then
      return
    end
    local id = fargs[2]
    if not id then
      local listed = client.await("remote/list", { remote = remote }).sessions or {}
      if #listed == 0 then
        return vim.notify(("sessiondag: %s holds no session"):format(remote), vim.log.levels.INFO)
      end
      local picked = ui.pick(listed, {
        prompt = "sessions on " .. remote,
        kind = "sessiondag.remote_session",
        format_item = function(s)
          local when = type(s.last_activity) == "number" and os.date("%Y-%m-%d %H:%M", math.floor(s.last_activity)) or ""
          return ("%s  %s  %s"):format(s.session_id, (s.title ~= "" and s.title) or "(untitled)", when)
        end,
      })
      if not picked then
        return
      end
      id = picked.session_id
    end
    local res = client.await("session/pull", { session_id = id, remote = remote, working_dir = vim.fn.getcwd() })
    session.switch(id)
    vim.notify(("sessiondag: opened session %s from %s (%s)"):format(id, remote, res.status), vim.log.levels.INFO)
  end)
end

return M

-- :Sessiondag push / pull / clone against a real `git daemon` on 127.0.0.1 (SD_TEST_REMOTE); "another
-- machine" is the CLI with its own state dir (SD_TEST_OTHER_STATE), which already pushed a session
-- of its own (SD_TEST_OTHER_ID). A push the daemon refuses (a credential in a node) is asked about,
-- and goes only once the user says "Push anyway".
local H = require("harness")
H.run(function()
  local remote, other, other_id = vim.env.SD_TEST_REMOTE, vim.env.SD_TEST_OTHER_STATE, vim.env.SD_TEST_OTHER_ID
  local heard = H.heard
  local function elsewhere(args)
    local r = vim.system(vim.list_extend({ "sessiondag" }, args), { text = true, env = { SESSIONDAG_HOME = other },
                                                                    cwd = vim.env.SD_TEST_WORK }):wait()
    H.eq(r.code, 0, table.concat(args, " ") .. ": " .. (r.stderr or ""))
  end

  local chat, session = H.chat_with_first_turn("local turn", "answered here")
  local sid = session.id
  vim.cmd("Sessiondag push " .. remote)
  H.wait(function()
    return heard(("pushed session %s to %s"):format(sid, remote))
  end, "the push")
  -- the other machine clones it, continues it, pushes; :Sessiondag pull merges its turn in
  elsewhere({ "sync", "clone", remote, sid, "--here", vim.env.SD_TEST_WORK })
  elsewhere({ "run", "from the other machine", "--session", sid, "--in-process" })
  elsewhere({ "sync", "push", remote, "--session", sid })
  vim.cmd("Sessiondag pull " .. remote)
  H.wait(function()
    return heard(("pulled session %s from %s"):format(sid, remote)) and H.buf_text(chat.buf):find("answered elsewhere", 1, true)
  end, "the pull, its turn in the chat")
  -- a credential in a node: the user is asked; "Cancel" pushes nothing, "Push anyway" pushes
  H.turn("a secret turn", "the token is")
  local asked = {}
  vim.ui.select = function(items, opts, on_choice)
    table.insert(asked, { items = items, prompt = opts.prompt })
    vim.schedule(function()
      on_choice(#asked == 1 and "Cancel" or "Push anyway")
    end)
  end
  local pushed = ("pushed session %s to %s"):format(sid, remote)
  local function pushes()
    local n = 0
    for _, note in ipairs(H.notes) do
      n = n + (note.msg:find(pushed, 1, true) and 1 or 0)
    end
    return n
  end
  vim.cmd("Sessiondag push " .. remote)
  H.wait(function()
    return #asked == 1
  end, "the question about the credential")
  vim.cmd("Sessiondag push " .. remote)
  H.wait(function()
    return pushes() == 2
  end, "the push, once confirmed")
  H.eq(#asked, 2, "asked once per push: the cancelled one sent nothing")
  H.eq(asked[1].items, { "Push anyway", "Cancel" }, "the choices")
  H.ok(asked[1].prompt:find("Push anyway?", 1, true) and asked[1].prompt:find("GitHub token", 1, true),
    "the question names what was found: " .. asked[1].prompt)
  -- a session only the other machine has: picked from what the remote holds, cloned, switched to
  local offered = H.pick_session(other_id)
  vim.cmd("Sessiondag clone " .. remote)
  H.wait(function()
    return session.id == other_id and H.buf_text(chat.buf):find("started elsewhere", 1, true)
  end, "the cloned session in the chat", 60000)
  H.ok(heard(("opened session %s from %s (cloned)"):format(other_id, remote)), "the clone notice")
  local titled = false
  for _, line in ipairs(offered() or {}) do
    titled = titled or line:find(other_id .. "  a session from elsewhere", 1, true) ~= nil
  end
  H.ok(titled, "the pick shows id and title: " .. vim.inspect(offered()))
  -- a turn on the cloned session runs like any other (a stale note said it ran out of script replies)
  H.turn("a turn on the clone", "answered on the clone")
  H.ok(session.id == other_id, "the turn ran on the clone")
end)

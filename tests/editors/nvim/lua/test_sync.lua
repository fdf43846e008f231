-- :Sessiondag push / pull / clone against a real `git daemon` on 127.0.0.1 (SD_TEST_REMOTE); "another
-- machine" is the CLI with its own state dir (SD_TEST_OTHER_STATE), which already pushed a session
-- of its own (SD_TEST_OTHER_ID).
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
end)

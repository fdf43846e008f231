-- ask_user through vim.ui.input; a failed turn (error kind via vim.notify) retried from the branches
-- buffer; compaction; :Sessiondag render / log / sessions; an unbound working dir warns once.
local H = require("harness")

local function noted(needle)
  local n = 0
  for _, note in ipairs(H.notes) do
    if note.msg:find(needle, 1, true) then
      n = n + 1
    end
  end
  return n
end

H.run(function()
  require("sessiondag").setup({ layout = "tab" })
  local chat = require("sessiondag.chat")
  local session = require("sessiondag.session")
  local branches = require("sessiondag.branches")
  local client = require("sessiondag.client")
  H.open_chat()

  -- the agent asks; the user answers through vim.ui.input
  local asked
  H.answer_input("green", function(opts)
    asked = opts
  end)
  chat.send("pick a color")
  H.wait(function()
    return not session.running and H.buf_text(chat.buf):find("green it is", 1, true)
  end, "the answer used")
  H.ok(asked.prompt:find("color", 1, true) and asked.prompt:find("red/green", 1, true), "question: " .. asked.prompt)

  -- a failed turn: the error shows with its kind
  chat.send("please fail")
  H.wait(function()
    return not session.running and noted("turn failed: ProviderError: boom") == 1
  end, "the error notification")

  -- retry it from the branches buffer
  vim.cmd("Sessiondag branches")
  H.wait(function()
    return branches.buf and H.buf_text(branches.buf):find("✗ #%d+ please fail")
  end, "the failed turn in the branches buffer")
  H.press(branches.buf, H.line_of(branches.buf, "please fail"), "r")
  H.wait(function()
    return not session.running and H.buf_text(chat.buf):find("recovered", 1, true)
      and H.buf_text(branches.buf):find("✓ #%d+ please fail")
  end, "the retried turn on a new branch")

  -- the retry that worked is the main line now (the failed try a fork beside it);
  -- compact the current branch through its last turn
  H.wait(function()
    return H.buf_text(branches.buf):find("● main", 1, true)
      and H.buf_text(branches.buf):find("○ failed try of turn %d+ %(error: boom%)")
  end, "the retry, current, is the main line; the failed try labelled by its failure")
  local lines = vim.api.nvim_buf_get_lines(branches.buf, 0, -1, false)
  local cur
  for i, l in ipairs(lines) do
    if l:find("● main", 1, true) then
      cur = i + 1 -- its own turn
    end
  end
  H.answer_input("the user picked green, then a retry recovered")
  H.press(branches.buf, cur, "c")
  H.wait(function()
    return H.buf_text(chat.buf):find("## Summary", 1, true) and H.buf_text(chat.buf):find("compacted", 1, true)
  end, "the summary in the chat")

  -- render: the exact messages of the model call under the cursor
  vim.api.nvim_set_current_win(vim.fn.win_findbuf(chat.buf)[1])
  vim.api.nvim_win_set_cursor(0, { H.line_of(chat.buf, "green it is"), 0 })
  local llm = chat.llm_at_cursor()
  vim.cmd("Sessiondag render")
  H.wait(function()
    return vim.fn.bufnr("sessiondag://render/" .. llm) ~= -1
  end, "the render buffer")
  local rbuf = vim.fn.bufnr("sessiondag://render/" .. llm)
  local messages = vim.json.decode(H.buf_text(rbuf))
  H.eq(vim.bo[rbuf].filetype, "json", "json buffer")
  H.eq(messages[1].role, "system", "system prompt first")
  H.eq(messages[#messages].role, "tool", "that call received the ask_user result last")
  H.ok(messages[#messages].content:find("green", 1, true), "the answer is in it")

  -- the session's git log
  vim.cmd("Sessiondag log")
  H.wait(function()
    local b = vim.fn.bufnr("sessiondag://log/" .. session.id)
    return b ~= -1 and H.buf_text(b):find("^commit %x+")
  end, "the git log")

  -- the working dir disappears: one warning, turns refused with their kind, the statusline says so.
  -- (Before a second session is opened: the daemon restarts its watchers then and can miss a rename.)
  local wd = vim.env.SD_TEST_WORK
  H.eq(vim.fn.rename(wd, wd .. ".moved"), 0, "rename")
  H.wait(function()
    return noted("new turns are refused") == 1
  end, "the unbind warning")
  H.ok(require("sessiondag").status():find("[unbound]", 1, true), "status: " .. require("sessiondag").status())
  chat.send("anything")
  H.wait(function()
    return noted("working_dir_unbound") == 1
  end, "the refused prompt with its kind")
  H.eq(vim.fn.rename(wd .. ".moved", wd), 0, "rename back")
  H.wait(function()
    return session.bound
  end, "rebound")
  H.eq(noted("new turns are refused"), 1, "warned once")

  -- a second session for this directory, picked with :Sessiondag sessions
  local first = session.id
  local other
  client.run(function()
    other = client.await("session/start", { working_dir = vim.fn.getcwd() }).session_id
  end)
  H.wait(function()
    return other
  end, "second session")
  local offered = H.pick_session(other)
  vim.cmd("Sessiondag sessions")
  H.wait(function()
    return session.id == other and H.buf_text(chat.buf):find("# sessiondag " .. other, 1, true)
  end, "the picked session in the chat")
  H.eq(#offered(), 2, "both sessions offered")
  H.ok(offered()[1]:find(first, 1, true) or offered()[2]:find(first, 1, true), "current one offered")

end)

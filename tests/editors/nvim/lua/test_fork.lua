-- Forking from a turn with an edited prompt: the fork appears in the branches buffer.
local H = require("harness")
H.run(function()
  local chat, session, branches = H.chat_with_first_turn("first question", "first answer")
  H.turn("second question", "second answer")
  vim.cmd("Sessiondag branches")
  H.wait(function()
    return branches.buf and H.buf_text(branches.buf):find("#%d+ second question")
  end, "branches buffer with both turns")
  -- fork at the second turn with an edited prompt
  local lnum = H.line_of(branches.buf, "second question")
  H.answer_input("edited question", function(opts)
    H.eq(opts.default, "second question", "the fork prompt starts from the turn's text")
  end)
  H.press(branches.buf, lnum, "f")
  H.wait(function()
    local t = H.buf_text(branches.buf)
    return not session.running and t:find("edited question", 1, true) and t:find("(2)", 1, true)
      and t:find("● edited question  completed  from turn 1  " .. session.head_id:sub(1, 8), 1, true)
  end, "the fork, with the head its turn ended on, in the branches buffer")
  local text = H.buf_text(branches.buf)
  H.log(text)
  -- the fork hangs under the first turn (it shares it), the current head is marked
  local lines = vim.api.nvim_buf_get_lines(branches.buf, 0, -1, false)
  local fork_line
  for i, l in ipairs(lines) do
    if l:find("edited question", 1, true) then
      fork_line = i
    end
  end
  -- labelled by its first differing message, where it leaves the main line (issue 26: it said "fork")
  H.ok(lines[fork_line - 1]:find("^%s+● edited question  completed  from turn 1"), "the current fork is marked: " .. lines[fork_line - 1])
  H.ok(H.buf_text(chat.buf):find("edited answer", 1, true), "the chat shows the fork's branch")
  H.ok(not H.buf_text(chat.buf):find("second answer", 1, true), "and not the other branch")
  -- name it, then check out the main branch again
  H.answer_input("edited")
  H.press(branches.buf, fork_line - 1, "n")
  H.wait(function()
    return H.buf_text(branches.buf):find("● edited", 1, true)
  end, "the named branch")
  local main_line = H.line_of(branches.buf, "○ main")
  H.press(branches.buf, main_line, "<CR>")
  H.wait(function()
    return H.buf_text(branches.buf):find("● main", 1, true) and H.buf_text(chat.buf):find("second answer", 1, true)
  end, "checkout of main shows in the branches and the chat")
end)

-- A prompt streams into the chat buffer; tool calls fold; the result is committed.
local H = require("harness")
H.run(function()
  require("sessiondag").setup({ layout = "tab", transport = vim.env.SD_TEST_TRANSPORT })
  local chat = require("sessiondag.chat")
  local seen_partial = false
  H.open_chat()
  -- every change of the chat buffer, as the user would see it: the reply grows delta by delta
  vim.api.nvim_buf_attach(chat.buf, false, {
    on_lines = function(_, buf)
      local t = H.buf_text(buf)
      if t:find("The quick brown", 1, true) and not t:find("lazy dog", 1, true) then
        seen_partial = true
      end
    end,
  })
  H.eq(vim.bo[chat.pbuf].buftype, "prompt", "prompt buffer")
  chat.send("tell me a story")
  H.wait(function()
    return H.buf_text(chat.buf):find("over the lazy dog.", 1, true) and not require("sessiondag.session").running
  end, "the streamed reply")
  local text = H.buf_text(chat.buf)
  H.ok(text:find("## You", 1, true), "user row: " .. text)
  H.ok(text:find("tell me a story", 1, true), "prompt text")
  H.ok(text:find("▸ tool list_dir", 1, true), "tool call line: " .. text)
  -- the tool call is a closed fold
  local lnum = H.line_of(chat.buf, "▸ tool list_dir")
  local win = vim.fn.win_findbuf(chat.buf)[1]
  vim.api.nvim_win_call(win, function()
    H.ok(vim.fn.foldclosed(lnum) == lnum, "tool call fold closed at " .. lnum)
  end)
  H.ok(require("sessiondag").status():find("^sd:"), "status " .. require("sessiondag").status())
  H.ok(seen_partial, "the reply was shown partially while it streamed")
  H.eq(require("sessiondag.client").socket, vim.env.SD_TEST_TRANSPORT == "stdio" and "stdio" or
    require("sessiondag.paths").default_socket(vim.env.SD_TEST_STATE), "transport")

  -- <C-c> in the chat cancels the running turn (agent/cancel)
  chat.send("hang please")
  H.wait(function()
    return H.buf_text(chat.buf):find("waiting on the model", 1, true)
  end, "the hanging turn")
  H.ok(require("sessiondag.session").running, "the turn runs")
  H.press(chat.buf, nil, "<C-c>")
  H.wait(function()
    return not require("sessiondag.session").running and H.buf_text(chat.buf):find("· cancelled", 1, true)
  end, "the cancelled turn")
  local cancelled_note = false
  for _, n in ipairs(H.notes) do
    cancelled_note = cancelled_note or n.msg:find("turn cancelled", 1, true) ~= nil
  end
  H.ok(cancelled_note, "a cancelled turn is reported")
end)

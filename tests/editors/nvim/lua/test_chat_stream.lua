-- A prompt streams into the chat buffer; tool calls fold; the result is committed.
local H = require("harness")
H.run(function()
  require("sessiondag").setup({ layout = "tab" })
  local chat = require("sessiondag.chat")
  local seen_partial = false
  vim.cmd("Sessiondag")
  H.wait(function()
    return chat.buf and H.buf_text(chat.buf):find("# sessiondag s%-")
  end, "the chat buffer")
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
  local lnum
  for i, l in ipairs(vim.api.nvim_buf_get_lines(chat.buf, 0, -1, false)) do
    if l:find("▸ tool list_dir", 1, true) then
      lnum = i
    end
  end
  local win = vim.fn.win_findbuf(chat.buf)[1]
  vim.api.nvim_win_call(win, function()
    H.ok(vim.fn.foldclosed(lnum) == lnum, "tool call fold closed at " .. lnum)
  end)
  H.ok(require("sessiondag").status():find("^sd:"), "status " .. require("sessiondag").status())
  H.ok(seen_partial, "the reply was shown partially while it streamed")
end)

-- A prompt the daemon refuses (the session's recorded model needs an endpoint this daemon's
-- environment lacks): the reason shows above the prompt, naming the daemon, and the typed text is
-- put back on the prompt line; nothing ran.
local H = require("harness")
H.run(function()
  require("sessiondag").setup({ layout = "tab" })
  local chat = require("sessiondag.chat")
  local session = require("sessiondag.session")
  H.open_chat()
  vim.api.nvim_set_current_win(vim.fn.win_findbuf(chat.pbuf)[1])
  vim.api.nvim_feedkeys(vim.api.nvim_replace_termcodes("ihello from neovim<CR>", true, false, true), "x", false)
  H.wait(function()
    local marks = vim.api.nvim_buf_get_extmarks(chat.pbuf, -1, 0, -1, { details = true })
    return #marks > 0 and not session.running
  end, "the refusal above the prompt")
  local marks = vim.api.nvim_buf_get_extmarks(chat.pbuf, -1, 0, -1, { details = true })
  local shown = marks[1][4].virt_lines[1][1][1]
  H.ok(shown:find("daemon's environment", 1, true), "the reason names the daemon: " .. shown)
  local lines = vim.api.nvim_buf_get_lines(chat.pbuf, 0, -1, false)
  H.ok(lines[#lines]:find("hello from neovim", 1, true), "the typed text is back: " .. vim.inspect(lines))
end)

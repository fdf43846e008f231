-- :Sessiondag restore and :Sessiondag diff in a real Neovim against a real daemon: two turns write a
-- file, restore goes back to the first after a question listing what it changes (the buffer reloads), a dirty tree asks before forcing, undo
-- returns, and diff opens the two versions side by side in diff mode.
local H = require("harness")
H.run(function()
  require("sessiondag").setup({ layout = "tab" })
  local selects = {}
  vim.ui.select = function(items, opts, on_choice)
    table.insert(selects, { items = items, prompt = opts.prompt, kind = opts.kind })
    vim.schedule(function()
      on_choice(items[1], 1) -- Allow (permissions), Restore anyway (a dirty tree)
    end)
  end
  local chat = require("sessiondag.chat")
  local session = require("sessiondag.session")
  local ck = require("sessiondag.checkpoints")
  local f = vim.env.SD_TEST_WORK .. "/f.txt"
  H.open_chat()
  local function answers()
    local _, n = H.buf_text(chat.buf):gsub("wrote it", "")
    return n
  end
  chat.send("one")
  H.wait(function()
    return not session.running and answers() == 1
  end, "turn one")
  local first = session.head_id
  chat.send("two")
  H.wait(function()
    return not session.running and answers() == 2
  end, "turn two")
  H.eq(vim.fn.readfile(f), { "two" }, "the second turn's file")
  -- the file open in a buffer, then restored to the first turn: the buffer follows
  vim.cmd("tabnew " .. vim.fn.fnameescape(f))
  local fbuf = vim.api.nvim_get_current_buf()
  vim.cmd("Sessiondag restore " .. first .. " --dry-run")
  H.wait(function()
    return ck.last and ck.last.dry_run
  end, "the dry run")
  H.eq(vim.fn.readfile(f), { "two" }, "a dry run changes nothing")
  vim.cmd("Sessiondag restore " .. first)
  H.wait(function()
    return ck.last and not ck.last.dry_run and vim.fn.readfile(f)[1] == "one"
  end, "the restore")
  -- asked first, with what it would change (a dry run)
  local plan = selects[#selects]
  H.eq(plan.kind, "sessiondag.restore_plan", "the restore asked first")
  H.ok(plan.prompt:find("restore 1 file(s) to", 1, true) and plan.prompt:find("overwrite f.txt", 1, true),
    "listing the file it overwrites: " .. plan.prompt)
  H.wait(function()
    vim.cmd("checktime")
    return vim.api.nvim_buf_get_lines(fbuf, 0, -1, false)[1] == "one"
  end, "the open buffer shows the restored file")
  -- a file the user changed: asked, then forced (the undo point keeps it)
  vim.fn.writefile({ "mine" }, vim.env.SD_TEST_WORK .. "/mine.txt")
  ck.last = nil
  vim.cmd("Sessiondag restore --undo")
  H.wait(function()
    return ck.last and vim.fn.readfile(f)[1] == "two"
  end, "the undo after the question")
  local asked = selects[#selects]
  H.eq(asked.kind, "sessiondag.restore", "the dirty tree was asked about")
  H.ok(asked.prompt:find("mine.txt", 1, true), "naming the changed file: " .. asked.prompt)
  -- diff: the first turn against the files now, side by side
  local tabs = #vim.api.nvim_list_tabpages()
  vim.cmd("Sessiondag diff " .. first)
  H.wait(function()
    return #vim.api.nvim_list_tabpages() == tabs + 1
  end, "a diff tab")
  local wins = vim.api.nvim_tabpage_list_wins(0)
  H.eq(#wins, 2, "two windows")
  local left = vim.api.nvim_win_get_buf(wins[1])
  local right = vim.api.nvim_win_get_buf(wins[2])
  H.eq(vim.api.nvim_buf_get_lines(left, 0, -1, false)[1], "one", "the first turn's version on the left")
  H.eq(vim.api.nvim_buf_get_name(right), f, "the file itself on the right")
  H.ok(vim.wo[wins[1]].diff and vim.wo[wins[2]].diff, "both in diff mode")
  H.ok(vim.api.nvim_buf_get_name(left):find("^sessiondag://"), "the old side is a sessiondag buffer")
end)

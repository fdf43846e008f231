-- Tiny test harness for headless Neovim: wait on conditions, assert, exit with a status.
local H = {}

function H.log(...)
  io.stderr:write(table.concat(vim.tbl_map(tostring, { ... }), " ") .. "\n")
end

function H.fail(msg)
  H.log("FAIL: " .. msg)
  H.log(debug.traceback())
  vim.cmd("cquit 1")
end

--- Wait until cond() is truthy (processing events meanwhile); fail with msg after timeout ms.
function H.wait(cond, msg, timeout)
  local ok = vim.wait(timeout or 20000, function()
    local good, v = pcall(cond)
    return good and v
  end, 10)
  if not ok then
    H.fail("timed out waiting for " .. msg)
  end
end

function H.eq(a, b, msg)
  if not vim.deep_equal(a, b) then
    H.fail(("%s: expected %s, got %s"):format(msg or "eq", vim.inspect(b), vim.inspect(a)))
  end
end

function H.ok(v, msg)
  if not v then
    H.fail(msg or "assertion failed")
  end
end

function H.buf_text(buf)
  return table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), "\n")
end

--- The last line (1-based) of buf containing `needle` (plain), or nil.
function H.line_of(buf, needle)
  local found
  for i, l in ipairs(vim.api.nvim_buf_get_lines(buf, 0, -1, false)) do
    if l:find(needle, 1, true) then
      found = i
    end
  end
  return found
end

--- Type `keys` in Normal mode with the cursor on line `lnum` of buf's window, as a user would
--- (buffer-local maps apply); fails if buf has no map for them.
function H.press(buf, lnum, keys)
  local win = vim.fn.win_findbuf(buf)[1]
  H.ok(win, "a window shows buffer " .. buf)
  vim.api.nvim_set_current_win(win)
  vim.cmd.stopinsert()
  if lnum then
    vim.api.nvim_win_set_cursor(win, { lnum, 0 })
  end
  H.ok(vim.fn.maparg(keys, "n", false, true).buffer == 1, "a buffer-local map for " .. keys)
  vim.cmd.normal(vim.keycode(keys))
end

--- :Sessiondag chat, waited until the chat buffer shows its session; returns the chat module.
function H.open_chat()
  local chat = require("sessiondag.chat")
  vim.cmd("Sessiondag chat")
  H.wait(function()
    return chat.buf and require("sessiondag.session").id and H.buf_text(chat.buf):find("# sessiondag s%-")
  end, "the chat buffer")
  return chat
end

--- One chat turn: send `prompt` and wait until the turn is over and the chat shows `answer`.
function H.turn(prompt, answer)
  local chat = require("sessiondag.chat")
  local session = require("sessiondag.session")
  chat.send(prompt)
  H.wait(function()
    return not session.running and H.buf_text(chat.buf):find(answer, 1, true)
  end, answer)
end

--- The set-up the branch tests share: the plugin in a tab, a chat open, its first turn answered.
--- Returns the chat, session and branches modules.
function H.chat_with_first_turn(prompt, answer)
  require("sessiondag").setup({ layout = "tab" })
  H.open_chat()
  H.turn(prompt, answer)
  return require("sessiondag.chat"), require("sessiondag.session"), require("sessiondag.branches")
end

--- The set-up the daemon-replacement tests share: the plugin with auto_start off, a chat open.
--- Returns the client module and its connection generation now.
function H.chat_without_auto_start()
  require("sessiondag").setup({ layout = "tab", auto_start = false })
  H.open_chat()
  local client = require("sessiondag.client")
  return client, client.generation
end

--- After the daemon was replaced: wait (`what`) until the plugin is connected to a new one (a
--- connection generation after `gen`), then one turn on it answered `answer`.
function H.turn_on_new_daemon(gen, what, prompt, answer)
  local client = require("sessiondag.client")
  H.wait(function()
    return client.state == "connected" and client.generation > gen
  end, what, 60000)
  H.turn(prompt, answer)
end

--- vim.ui.select answered as a user picking the item whose session_id is `id` (nothing picked when
--- no item has it). Returns a function giving the lines the last pick offered (format_item's).
function H.pick_session(id)
  local offered
  vim.ui.select = function(items, opts, on_choice)
    offered = vim.tbl_map(opts.format_item, items)
    for _, it in ipairs(items) do
      if it.session_id == id then
        return vim.schedule(function()
          on_choice(it)
        end)
      end
    end
    on_choice(nil)
  end
  return function()
    return offered
  end
end

--- vim.ui.input answered with `text` (after `check(opts)`, when given), as a user typing it.
function H.answer_input(text, check)
  vim.ui.input = function(opts, on_confirm)
    if check then
      check(opts)
    end
    vim.schedule(function()
      on_confirm(text)
    end)
  end
end

--- Whether the plugin said `text` (a plain substring of a vim.notify message) since H.run began.
function H.heard(text)
  for _, n in ipairs(H.notes or {}) do
    if type(n.msg) == "string" and n.msg:find(text, 1, true) then
      return true
    end
  end
  return false
end

--- Run fn; any error fails the test; success quits with status 0.
function H.run(fn)
  local notes = {}
  local orig_notify = vim.notify
  vim.notify = function(msg, level, o)
    table.insert(notes, { msg = msg, level = level })
    H.log("notify:", level, msg)
  end
  H.notes = notes
  local ok, err = xpcall(fn, debug.traceback)
  vim.notify = orig_notify
  if not ok then
    H.fail(tostring(err))
    return
  end
  H.log("PASS")
  vim.cmd("qa!")
end

return H

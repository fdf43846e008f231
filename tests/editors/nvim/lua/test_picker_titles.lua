-- :Sessiondag sessions labels each session by its title — the first message, or the one
-- `sessiondag sessions name` set (also while the daemon holds the session) — as the CLI does, with
-- the id after it (issue 26, item 12: the picker used to label sessions by id).
local H = require("harness")

H.run(function()
  require("sessiondag").setup({ layout = "tab" })
  local want = vim.json.decode(vim.env.SD_TEST_TITLES)   -- {session_id = title} from the CLI
  local offered, prompt
  vim.ui.select = function(items, opts, on_choice)
    prompt = opts.prompt
    offered = {}
    for _, it in ipairs(items) do
      offered[it.session_id] = opts.format_item(it)
    end
    vim.schedule(function()
      on_choice(nil)
    end)
  end
  vim.cmd("Sessiondag sessions")
  H.wait(function()
    return offered
  end, "the picker")
  H.ok(prompt:find(vim.fn.getcwd(), 1, true), "the picker names the directory: " .. prompt)
  H.eq(vim.tbl_count(offered), vim.tbl_count(want), "every session of this directory offered")
  for sid, title in pairs(want) do
    local label = offered[sid]
    H.ok(label, "offered " .. sid)
    H.eq(label:sub(1, #title), title, "the label starts with the title")
    H.ok(label:find(sid, 1, true), "the id is there too: " .. label)
  end
end)

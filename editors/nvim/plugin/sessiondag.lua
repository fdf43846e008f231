-- sessiondag.nvim: defines :Sessiondag; everything else loads on first use.
if vim.g.loaded_sessiondag then
  return
end
vim.g.loaded_sessiondag = true

vim.api.nvim_create_user_command("Sessiondag", function(args)
  require("sessiondag").command(args)
end, {
  nargs = "*",
  desc = "sessiondag: chat | sessions | branches | render | log | restore | diff | push | pull | clone | cancel | start | status",
  complete = function(lead)
    return require("sessiondag").complete(lead)
  end,
})

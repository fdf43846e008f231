"""Costs in the Neovim plugin (editors/nvim): statusline and branches buffer, in a real headless
Neovim against a real daemon whose scripted model has a price (a config file's [prices] table)."""


def test_cost_in_statusline_and_branches_buffer(nv, tmp_path):
    cfg = tmp_path / "config.toml"
    cfg.write_text('[prices."scripted/scripted"]\ninput_per_mtok = 2.0\noutput_per_mtok = 10.0\n')
    nv.env["SESSIONDAG_CONFIG"] = str(cfg)
    nv.write_script("- match: first question\n  text: first answer\n  usage: {input_tokens: 1000, output_tokens: 100}\n"
                    "- match: second question\n  text: second answer\n  usage: {input_tokens: 2000, output_tokens: 20}\n"
                    "- match: edited question\n  text: edited answer\n  usage: {input_tokens: 500, output_tokens: 0}\n")
    nv.start_daemon()
    nv.run_lua("test_usage")

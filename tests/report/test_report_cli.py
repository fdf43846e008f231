"""`sessions export --format html` and `run --report` as real subprocesses: files written whole,
failed turns reported too, masking, and clear refusals of bad options."""

from __future__ import annotations

import json

from report_support import FAKE_KEY, HOSTILE, sd


def test_run_report_is_written_after_a_failed_turn(tmp_path):
    home, wd = tmp_path / "state", tmp_path / "work"
    home.mkdir()
    wd.mkdir()
    script = tmp_path / "s.json"
    script.write_text(json.dumps([{"text": "half an answer", "error": "the provider fell over"}]))
    out = tmp_path / "ci" / "report.html"
    out.parent.mkdir()
    p = sd(["run", "--state-dir", home, "--in-process", "--provider", "scripted", "--script", script,
            "--report", out, "do the job"], home=home, cwd=wd, check=False)
    assert p.returncode == 1, p.stderr
    html = out.read_text()
    assert "the provider fell over" in html and "do the job" in html
    assert f"wrote {out}" in p.stderr
    assert [f.name for f in out.parent.iterdir()] == ["report.html"]     # no temporary file left behind


def test_redact_masks_text_everywhere_and_keys_always(rich, tmp_path):
    home, wd, sid = rich
    out = tmp_path / "r.html"
    sd(["sessions", "export", "--state-dir", home, sid, "--format", "html", "-o", out, "--redact", "ünïcödé",
        "--redact", r"hello\.py"], home=home, cwd=wd)
    html = out.read_text()
    assert "ünïcödé" not in html and "hello.py" not in html and FAKE_KEY not in html
    assert "Grüße — [redacted]" in html
    # the markdown export keeps its text (masking is the report's)
    md = sd(["sessions", "export", "--state-dir", home, sid], home=home, cwd=wd).stdout
    assert "hello.py" in md


def test_bad_options_are_refused_and_write_nothing(rich, tmp_path):
    home, wd, sid = rich
    out = tmp_path / "r.html"
    p = sd(["sessions", "export", "--state-dir", home, sid, "--format", "html", "-o", out, "--redact", "(oops"],
           home=home, cwd=wd, check=False)
    assert p.returncode == 2 and "not a regular expression" in p.stderr and not out.exists()
    p = sd(["sessions", "export", "--state-dir", home, sid, "--redact", "x"], home=home, cwd=wd, check=False)
    assert p.returncode == 2 and "--format html" in p.stderr
    p = sd(["run", "--state-dir", home, "--redact", "x", "task"], home=home, cwd=wd, check=False)
    assert p.returncode == 2 and "--report FILE" in p.stderr
    p = sd(["sessions", "export", "--state-dir", home, sid, "--format", "html", "-o", tmp_path / "no" / "dir.html"],
           home=home, cwd=wd, check=False)
    assert p.returncode == 1 and "cannot write" in p.stderr


def test_html_goes_to_stdout_without_o(rich):
    home, wd, sid = rich
    p = sd(["sessions", "export", "--state-dir", home, sid, "--format", "html"], home=home, cwd=wd)
    assert p.stdout.startswith("<!doctype html>") and p.stdout.rstrip().endswith("</html>")
    assert HOSTILE not in p.stdout                                   # a tool output cannot end its element
    assert "\\u003cscript\\u003ewindow.pwned=1\\u003c/script\\u003e" in p.stdout

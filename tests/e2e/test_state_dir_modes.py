"""The daemon warns at start when group or others may write its state dir (issue 19, item 7): they
could plant sessions or symlinks in it."""

import os
import signal


def test_the_daemon_warns_about_a_state_dir_others_may_write(daemon_factory, state_dir):
    os.chmod(state_dir, 0o777)
    d = daemon_factory("--socket", "--state-dir", str(state_dir))
    assert any("group or others may write it" in line and str(state_dir) in line for line in d.lines), d.lines
    assert d.stop(signal.SIGTERM) == 0


def test_no_warning_for_a_private_state_dir(daemon_factory, state_dir):
    os.chmod(state_dir, 0o700)
    d = daemon_factory("--socket", "--state-dir", str(state_dir))
    assert not any("may write it" in line for line in d.lines), d.lines
    assert d.stop(signal.SIGTERM) == 0

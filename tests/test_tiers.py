"""The fast tier's guard (tests/tiers.py) on a small suite of its own: under --tier=fast a test that
starts a child process without its marker is refused; in the full suite the same test fails too
(its call goes through), so a missing marker shows in `make test`, not only in `make test-fast`."""

import os

import pytest

pytest_plugins = ["pytester"]

SUITE = '''
import subprocess, pytest

def test_unmarked_starts_a_process():
    subprocess.run(["true"], check=True)

@pytest.mark.process
def test_marked_starts_a_process():
    subprocess.run(["true"], check=True)

def test_pure():
    assert 1 + 1 == 2
'''


@pytest.fixture
def suite(pytester):
    pytester.makeconftest(f"import sys\nsys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r})\n"
                          'pytest_plugins = ["tiers"]\n')
    pytester.makepyfile(test_suite=SUITE)
    return pytester


@pytest.mark.process   # the inner suite starts `true`
def test_the_full_suite_fails_a_test_the_fast_tier_would_refuse(suite):
    r = suite.runpytest_subprocess("-p", "no:cacheprovider", "--tier=all")
    r.assert_outcomes(passed=3, errors=1)   # the unmarked test passes, then fails at its teardown
    r.stdout.fnmatch_lines(["*test_unmarked_starts_a_process*", "*mark it `pytest.mark.process`*"])


@pytest.mark.process
def test_the_fast_tier_refuses_it_and_leaves_the_marked_one_out(suite):
    r = suite.runpytest_subprocess("-p", "no:cacheprovider", "--tier=fast")
    r.assert_outcomes(passed=1, failed=1, errors=1, deselected=1)   # refused in its call, reported again at teardown
    r.stdout.fnmatch_lines(["*the fast tier does not allow: mark it `pytest.mark.process`*"])

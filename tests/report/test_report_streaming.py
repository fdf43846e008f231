"""Streamed model text in the live viewer (report/streaming.py): whatever pieces the text arrives in,
the page's text — the patches applied the way the page applies them, in UTF-16 code units — is
always what the bridge decided to show, and a credential is never shown, not even half-typed."""

from __future__ import annotations

from hypothesis import given, settings, strategies as st

from report_support import FAKE_KEY
from sessiondag.report import Limits, Redactor
from sessiondag.report.streaming import Streams

WORDS = st.sampled_from(["alpha", "beta", "日本語", "✓", "😀emoji", "x", "\n", "  ", "<b>", "Grüße"])


def apply_js(page: str, at: int, s: str) -> str:
    """`page.slice(0, at) + s` with JavaScript's string indices (UTF-16 code units)."""
    units = page.encode("utf-16-le")[: 2 * at]
    return units.decode("utf-16-le") + s


@settings(max_examples=200, deadline=None)
@given(st.lists(WORDS, max_size=30), st.integers(0, 30), st.lists(st.integers(1, 9), min_size=1, max_size=40))
def test_the_page_shows_what_was_decided_and_never_a_key(words, at, cuts):
    words = list(words)
    words.insert(min(at, len(words)), FAKE_KEY)
    text = " ".join(words) + " done"
    streams = Streams(Limits())
    page, i, k = "", 0, 0
    while i < len(text):
        n = cuts[k % len(cuts)]
        k += 1
        streams.add("n1", text[i:i + n])
        i += n
        p = streams.patch("n1", 7)
        if p is not None:
            row, at16, s = p
            assert row == 7
            page = apply_js(page, int(at16), str(s))
        assert page == streams.by_node["n1"].sent
        for j in range(6, len(FAKE_KEY) + 1):
            assert FAKE_KEY[:j] not in page, "a key, or the start of one, was shown"
    assert page.endswith(" ") and "[redacted]" in page
    assert page == Redactor().text(text)[: len(page)]


def test_a_private_key_block_waits_for_its_end_and_the_limit_holds():
    streams = Streams(Limits(max_field_bytes=200))
    streams.add("n", "here it is -----BEGIN PRIVATE KEY----- MIIEvQIBADANBgkqhkiG9w0BAQEFAASC ")
    assert streams.shown("n") == "here it is "
    streams.add("n", "-----END PRIVATE KEY----- and more words " + "y " * 100)
    shown = streams.shown("n")
    assert "MIIE" not in shown and "[redacted]" in shown
    assert len(shown.encode()) <= 200

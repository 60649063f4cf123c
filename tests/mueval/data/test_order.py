"""``natural_key`` (:mod:`mueval.data.order`): a total order over any Unicode text.

Runs of decimal digits compare as the numbers they write; the reference here
is :class:`decimal.Decimal`, which reads a run of any length, and
:func:`unicodedata.decimal` for the digits of other scripts.
"""

from __future__ import annotations

import unicodedata
from decimal import Decimal

from hypothesis import example, given
from hypothesis import strategies as st

from mueval.data.order import natural_key

# Digits of every kind often, and any other character.
CHARS = st.one_of(st.sampled_from("0123456789\u0663\u00b2\u2460a_ "), st.characters())


@given(st.lists(st.text(CHARS), max_size=20))
@example(["\u00b2", "1\u2460", "u" + "7" * 5000])
def test_any_texts_sort_and_only_equal_texts_share_a_key(texts):
    ordered = sorted(texts, key=natural_key)
    assert sorted(ordered, key=natural_key) == ordered
    for a in texts:
        for b in texts:
            assert (natural_key(a) == natural_key(b)) == (a == b)


@given(
    st.lists(
        st.builds(lambda digit, n: digit * n, st.sampled_from("0123456789"), st.integers(1, 6000)),
        min_size=2,
        max_size=6,
    )
)
def test_digit_runs_compare_as_their_numbers_at_any_length(runs):
    ordered = sorted((f"u{r}" for r in runs), key=natural_key)
    numbers = [Decimal(u[1:]) for u in ordered]
    assert numbers == sorted(numbers)


def test_the_digits_of_other_scripts_are_numbers_and_superscripts_text():
    arabic_three = "\u0663"  # ARABIC-INDIC DIGIT THREE, a decimal digit
    assert unicodedata.decimal(arabic_three) == 3
    assert sorted(["n10", f"n{arabic_three}", "n2"], key=natural_key) == [
        "n2",
        f"n{arabic_three}",
        "n10",
    ]
    # Digits to str.isdigit but no decimals: text, after every number.
    assert sorted(["①", "²", "12", "9" * 5000], key=natural_key) == ["12", "9" * 5000, "²", "①"]
    assert sorted(["007", "7", "6"], key=natural_key) == ["6", "007", "7"]

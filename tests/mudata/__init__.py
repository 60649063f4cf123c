"""Tests of ``mudata``."""

"""Tests of ``mudata.drafting``."""

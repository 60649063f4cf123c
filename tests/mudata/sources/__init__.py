"""Tests of ``mudata.sources``."""

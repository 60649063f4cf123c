"""Tests of ``mudata.readers``."""

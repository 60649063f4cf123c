"""Tests of ``mudata.records``."""

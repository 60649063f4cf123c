"""Tests of ``mudata.building``."""

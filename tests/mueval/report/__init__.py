"""Tests of ``mueval.report``."""

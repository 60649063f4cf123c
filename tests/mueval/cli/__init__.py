"""Tests of ``mueval.cli``."""

"""Tests of ``mueval.comparison``."""

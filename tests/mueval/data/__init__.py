"""Tests of ``mueval.data``."""

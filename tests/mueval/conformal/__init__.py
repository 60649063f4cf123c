"""Tests of ``mueval.conformal``."""

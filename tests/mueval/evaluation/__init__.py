"""Tests of ``mueval.evaluation``."""

"""Tests of ``mueval.guarantees``."""

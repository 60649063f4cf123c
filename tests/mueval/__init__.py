"""Tests of ``mueval``."""

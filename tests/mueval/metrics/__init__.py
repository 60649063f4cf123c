"""Tests of ``mueval.metrics``."""

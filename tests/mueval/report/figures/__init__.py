"""Tests of ``mueval.report.figures``."""

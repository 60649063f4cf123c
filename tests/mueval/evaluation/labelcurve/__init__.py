"""Tests of ``mueval.evaluation.labelcurve``."""

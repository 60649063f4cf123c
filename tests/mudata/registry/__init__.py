"""Tests of ``mudata.registry``."""

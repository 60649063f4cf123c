"""Tests of ``mudata.publish``."""

"""Tests of ``mueval.runfolder``."""

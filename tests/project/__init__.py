"""Tests across the project: both tools, the docs, the wheel, real releases end to end."""

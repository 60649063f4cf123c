"""The version of mueval, in one small module that everything else may import."""

__all__ = ["__version__"]

__version__ = "0.1.0"

"""The version of mudata, in one small module that everything else may import."""

__version__ = "0.1.0"


__all__ = ["__version__"]

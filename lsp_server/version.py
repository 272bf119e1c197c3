"""The single version string (kept apart so importing it is free)."""

__version__ = "0.1.0"

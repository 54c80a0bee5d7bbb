"""delta-sync's version: a module of its own, so that what stamps it (saved plans, the engine's key, the GitHub
side) imports no other part of the package."""

__version__ = "0.1.0"

"""delta-sync: declarative schema migrations for Delta Lake tables on open-source Spark."""

__version__ = "0.1.0"

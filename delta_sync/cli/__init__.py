"""The command line: `delta-sync`'s light entry point and its commands."""

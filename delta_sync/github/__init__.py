"""The GitHub side of the packaged review workflow (`action.yml`); the standard library only."""

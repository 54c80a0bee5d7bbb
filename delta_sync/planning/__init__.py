"""Two catalog states -> immutable, ordered actions: their statements, hazards, protocol and compatibility
effects. Pure."""

"""The state model and the values every layer shares: one table type for both sides of the diff, the errors,
the catalog port. Pure."""

"""Saved plans: the versioned JSON document, its typed actions' codec and its signature."""

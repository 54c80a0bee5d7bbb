"""Two states diffed into actions: the tables' lifecycle, each table's diff part by part, the rewrites, and what
the parts share. Pure."""

"""SQL texts read and written without an engine: types, CHECK expressions, view queries, literals, statements
that destroy data. Pure."""

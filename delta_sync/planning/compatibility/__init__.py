"""The table protocol and who can still read and write each table after a plan: the protocol's rules, the
engines' support of each feature, and the readers and writers a plan leaves. Pure."""

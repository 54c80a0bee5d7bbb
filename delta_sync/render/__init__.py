"""Plans -> text, JSON, SQL and Markdown. Pure functions of the plan."""

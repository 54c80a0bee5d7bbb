"""Programs delta-sync starts as processes of their own: the warm engine, its preloaded fork server,
spark-submit's driver program, the class archive builder."""

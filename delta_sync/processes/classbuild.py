"""Write the JVM's class archive (delta_sync.spark.classcache) ahead of time:
python -m delta_sync.processes.classbuild."""

from __future__ import annotations

from pathlib import Path


def build(home: Path) -> None:
    """Write the archive now, from a short run on a throwaway catalog in `home` (a session started, a Delta
    table created, constrained, written and read as commands do), if none fits yet. For a CI job that keeps
    ~/.cache/delta-sync between runs (`python -m delta_sync.processes.classbuild`) and for the test suite; the
    warm engine writes one anyway when it stops."""
    from delta_sync.model.state import TableName
    from delta_sync.spark import classcache, session
    from delta_sync.spark.catalog import SparkCatalog
    from delta_sync.spark.jars import delta_jars

    found = classcache.archive_path(delta_jars(), {})
    if found is None or found.exists():
        return
    session.WRITE_CLASS_ARCHIVE = True
    catalog = SparkCatalog(session.LocalCatalog(home))
    spark = catalog.spark
    spark.sql("CREATE SCHEMA IF NOT EXISTS warm_up")
    spark.sql("CREATE TABLE IF NOT EXISTS warm_up.t (id BIGINT NOT NULL, v STRING) USING delta")
    spark.sql("ALTER TABLE warm_up.t ADD CONSTRAINT id_pos CHECK (id > 0)")
    spark.sql("INSERT INTO warm_up.t VALUES (1, 'a')")
    catalog.read([TableName(None, "warm_up", "t")])
    spark.sql("DESCRIBE HISTORY warm_up.t").collect()
    spark.sql("SELECT count_if(NOT coalesce(id > 0, false)) FROM warm_up.t").collect()
    session.release()


if __name__ == "__main__":
    import sys
    import tempfile

    build(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp(prefix="delta-sync-classes-")))

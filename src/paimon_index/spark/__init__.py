"""PySpark integration: the session helper (and, next, the ``paimon_index`` data source)."""

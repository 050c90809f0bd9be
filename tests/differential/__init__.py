"""The differential suite's helpers (issue 12): paimon_index answers vs independent references.

    generate.py    random tables (every index-supported type, nested and unindexed columns, edge
                   values, partitions, several files, deletion vectors) and their materialization
                   as a paimon_index table plus a plain Parquet copy of the live rows
    queries.py     random WHERE trees and Spark query shapes
    expr.py        the WHERE tree, its Spark and paimon_index.sql spellings, a reference evaluator
    compare.py     multiset comparison under Spark's equality (NaN = NaN, -0.0 = 0.0)
    known_bugs.py  the one table of known bugs; each has a strict-xfail minimal repro
    matrix.py      table kinds (append/primary-key × unaware/fixed/dynamic bucket × partitioned) ×
                   states (load, upsert, DELETE/UPDATE, overwrite, compaction, schema change) ×
                   read paths (Table.read/count/min_max/TopN, jobs.read small and Parquet, the
                   Spark source, jobs.count, pypaimon, Java Paimon) against a Python model

Tests: tests/spark/test_differential.py (Spark source, indexes on/off, vs spark.read.parquet; and
the evaluator vs Spark SQL), tests/table/test_differential_python.py (read_arrow vs the
evaluator) and tests/spark/test_differential_matrix.py (the matrix, one cell per kind × path).
CI runs fixed seeds; ``-m slow`` adds hypothesis-drawn seeds (and drawn state sequences). When a
fix lands, its repro's strict xfail fails: delete the repro's mark and the bug's entry in known_bugs.py.
"""

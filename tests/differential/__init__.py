"""The differential suite's helpers: table and query generators, a reference evaluator, known bugs."""

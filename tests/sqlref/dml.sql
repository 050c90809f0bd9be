-- One sequence of DDL, DML and CALLs over a copy of the shapes warehouse (tests/sqlref/shapes.py):
-- each side runs it on its own copy; each statement's outcome is compared; then the queries tagged
-- `final` (at the end: they read the final state) run on both copies through both sides.
-- No statement depends on snapshot ids written by the sequence (compaction may add snapshots on one
-- side): time travel in it goes by tag.

-- name: ddl_create_t1
CREATE TABLE shapes.t1 (id BIGINT, s STRING, v DECIMAL(10, 2)) TBLPROPERTIES ('bucket' = '-1', 'deletion-vectors.enabled' = 'true', 'file-index.bitmap.columns' = 's');
-- name: ddl_create_exists
CREATE TABLE shapes.t1 (id BIGINT) TBLPROPERTIES ('bucket' = '-1');
-- name: ddl_create_if_not_exists
CREATE TABLE IF NOT EXISTS shapes.t1 (id BIGINT) TBLPROPERTIES ('bucket' = '-1');
-- name: ins_values
INSERT INTO shapes.t1 VALUES (1, 'a', 1.50), (2, 'b', 2.25), (3, NULL, NULL);
-- name: ins_select
INSERT INTO shapes.t1 SELECT id, s, dec FROM shapes.a WHERE c < 5;
-- name: t1_after_insert
SELECT * FROM shapes.t1;
-- name: del_t1
DELETE FROM shapes.t1 WHERE s = 'apple';
-- name: upd_t1
UPDATE shapes.t1 SET v = v * 2 WHERE id % 2 = 0;
-- name: t1_after_update
SELECT * FROM shapes.t1;
-- name: del_a_arith
DELETE FROM shapes.a WHERE id % 7 = 0 AND c < 20;
-- name: upd_a
UPDATE shapes.a SET n = -1, s = upper(s) WHERE s = 'banana';
-- name: del_a_subquery
DELETE FROM shapes.a WHERE c IN (SELECT c FROM shapes.dim WHERE label = 'L10');
-- name: a_after
SELECT count(*), sum(n), count(DISTINCT s) FROM shapes.a;
-- name: del_k
DELETE FROM shapes.k WHERE dec < -300;
-- name: upd_k
UPDATE shapes.k SET n = n + 1 WHERE c BETWEEN 10 AND 12;
-- name: merge_k
MERGE INTO shapes.k t USING (SELECT id, c FROM shapes.a WHERE id < 50) src ON t.id = src.id WHEN MATCHED AND src.c = 2 THEN DELETE WHEN MATCHED THEN UPDATE SET t.n = src.c + 500 WHEN NOT MATCHED THEN INSERT (id, c, s, b, d, dec, dt, n) VALUES (src.id, src.c, 'new', true, 0.5, 1.00, date '2025-01-01', 0);
-- name: k_after_merge
SELECT id, c, s, n FROM shapes.k WHERE id < 50;
-- name: merge_a
MERGE INTO shapes.a t USING shapes.dim d ON t.c = d.c WHEN MATCHED AND d.label = 'L20' THEN DELETE WHEN MATCHED AND d.label = 'L22' THEN UPDATE SET n = 777;
-- name: ins_overwrite_static
INSERT OVERWRITE shapes.p PARTITION (region = 'us') SELECT id, c, s, b, d, dec, dt, n FROM shapes.a WHERE c < 3;
-- name: p_after_static
SELECT region, count(*) FROM shapes.p GROUP BY region;
-- name: ins_overwrite_dynamic
INSERT OVERWRITE shapes.p SELECT id, c, s, b, d, dec, dt, n, 'asia' AS region FROM shapes.a WHERE c > 25;
-- name: p_after_dynamic
SELECT region, count(*), sum(id) FROM shapes.p GROUP BY region;
-- name: truncate_dim
TRUNCATE TABLE shapes.dim;
-- name: dim_after_truncate
SELECT count(*) FROM shapes.dim;
-- name: alter_add_column
ALTER TABLE shapes.t1 ADD COLUMN extra INT;
-- name: ins_with_extra
INSERT INTO shapes.t1 VALUES (100, 'x', 9.99, 42);
-- name: alter_rename_column
-- (not `s`: Paimon refuses to rename a column with a file index)
ALTER TABLE shapes.t1 RENAME COLUMN v TO v2;
-- name: alter_rename_indexed_refused
-- (`s` has a file index: Paimon validates every new schema's index columns, so both sides refuse)
ALTER TABLE shapes.t1 RENAME COLUMN s TO s2;
-- name: alter_drop_indexed_refused
ALTER TABLE shapes.t1 DROP COLUMN s;
-- name: t1_after_rename
SELECT id, v2, extra FROM shapes.t1 WHERE id >= 100 OR v2 > 2;
-- name: alter_set_props
ALTER TABLE shapes.t1 SET TBLPROPERTIES ('file-index.bloom-filter.columns' = 'id');
-- name: t1_options
SELECT key, value FROM shapes.`t1$options` WHERE key LIKE 'file-index%' ORDER BY key;
-- name: call_rewrite_index
CALL sys.rewrite_file_index(table => 'shapes.t1');
-- name: alter_unset_props
ALTER TABLE shapes.t1 UNSET TBLPROPERTIES ('file-index.bloom-filter.columns');
-- name: alter_column_type
ALTER TABLE shapes.t1 ALTER COLUMN extra TYPE BIGINT;
-- name: alter_drop_column
ALTER TABLE shapes.t1 DROP COLUMN extra;
-- name: alter_dv_mode_refused
-- (switching the mode on a table with snapshots could read rows twice: both sides refuse)
ALTER TABLE shapes.k SET TBLPROPERTIES ('deletion-vectors.enabled' = 'false');
-- name: alter_merge_engine_refused
ALTER TABLE shapes.k SET TBLPROPERTIES ('merge-engine' = 'partial-update');
-- name: alter_dynamic_bucket_refused
ALTER TABLE shapes.t1 SET TBLPROPERTIES ('bucket' = '4');
-- name: alter_reset_bucket_refused
ALTER TABLE shapes.k UNSET TBLPROPERTIES ('bucket');
-- name: alter_same_primary_key
ALTER TABLE shapes.k SET TBLPROPERTIES ('primary-key' = 'id');
-- name: k_options_after_alters
SELECT key, value FROM shapes.`k$options` WHERE key IN ('deletion-vectors.enabled', 'merge-engine', 'bucket') ORDER BY key;
-- name: describe_t1
DESCRIBE shapes.t1;
-- name: call_compact_k
CALL sys.compact(table => 'shapes.k');
-- name: call_compact_a
CALL sys.compact(table => 'shapes.a');
-- name: a_after_compact
SELECT count(*), sum(n) FROM shapes.a;
-- name: tag_create
CALL sys.create_tag(table => 'shapes.a', tag => 'before_wipe');
-- name: tags_listed
SELECT tag_name FROM shapes.`a$tags`;
-- name: wipe_a
DELETE FROM shapes.a WHERE id < 100;
-- name: a_at_tag
SELECT count(*), sum(n) FROM shapes.a VERSION AS OF 'before_wipe';
-- name: rollback_a
CALL sys.rollback(table => 'shapes.a', version => 'before_wipe');
-- name: a_after_rollback
SELECT count(*), sum(n) FROM shapes.a;
-- name: tag_delete
CALL sys.delete_tag(table => 'shapes.a', tag => 'before_wipe');
-- name: tags_after_delete
SELECT count(*) FROM shapes.`a$tags`;
-- name: ctas
CREATE TABLE shapes.ctas TBLPROPERTIES ('bucket' = '-1') AS SELECT s, count(*) AS cnt FROM shapes.k GROUP BY s;
-- name: ctas_read
SELECT * FROM shapes.ctas;
-- name: drop_ctas
DROP TABLE shapes.ctas;
-- name: drop_missing
DROP TABLE shapes.ctas;
-- name: drop_if_exists
DROP TABLE IF EXISTS shapes.ctas;
-- name: create_db
CREATE DATABASE d2;
-- name: create_pk
CREATE TABLE d2.pk (id INT NOT NULL, v STRING, amt DECIMAL(12, 2)) TBLPROPERTIES ('primary-key' = 'id', 'bucket' = '2', 'deletion-vectors.enabled' = 'true', 'file-index.bitmap.columns' = 'v');
-- name: pk_insert
INSERT INTO d2.pk VALUES (1, 'a', 10.00), (2, 'b', 20.00), (3, 'c', 30.00), (4, 'a', 40.00);
-- name: pk_upsert
INSERT INTO d2.pk VALUES (2, 'bb', 21.00), (5, 'e', 50.00);
-- name: pk_delete
DELETE FROM d2.pk WHERE v = 'a' AND amt > 20;
-- name: pk_update
UPDATE d2.pk SET amt = amt + 0.5 WHERE id IN (1, 5);
-- name: pk_null_key
INSERT INTO d2.pk VALUES (NULL, 'n', 1.00);
-- name: pk_extra_column
INSERT INTO d2.pk VALUES (9, 'x', 1.00, 'extra');
-- name: pk_overflow
INSERT INTO d2.pk VALUES (10, 'o', 12345678901.00);
-- name: pk_by_name
INSERT INTO d2.pk (v, id, amt) VALUES ('named', 6, 60.00);
-- name: show_tables_d2
SHOW TABLES IN d2;
-- name: expire
CALL sys.expire_snapshots(table => 'shapes.k', retain_max => 2, retain_min => 1);
-- name: final_t1 final
SELECT * FROM shapes.t1;
-- name: final_a final
SELECT * FROM shapes.a;
-- name: final_k final
SELECT * FROM shapes.k;
-- name: final_p final
SELECT * FROM shapes.p;
-- name: final_dim final
SELECT * FROM shapes.dim;
-- name: final_pk final
SELECT * FROM d2.pk;
-- name: final_k_snapshot_count final
SELECT count(*) > 0 FROM shapes.`k$snapshots`;

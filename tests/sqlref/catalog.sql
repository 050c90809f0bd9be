-- Read-only statements about the shared warehouse: system tables (deterministic columns), time travel,
-- listings. Snapshot ids are the loads' (tpch.py, shapes.py): a = 3 writes + 1 delete, k = 3 writes +
-- an upsert + a delete, lineitem = 4 writes + 1 delete.

-- name: sys_snapshots_a ci
SELECT snapshot_id, schema_id, commit_kind, total_record_count, delta_record_count FROM shapes.`a$snapshots` ORDER BY snapshot_id;
-- name: sys_snapshots_k
SELECT snapshot_id, commit_kind, total_record_count FROM shapes.`k$snapshots` ORDER BY snapshot_id;
-- name: sys_snapshots_lineitem
SELECT snapshot_id, commit_kind FROM tpch.`lineitem$snapshots` ORDER BY snapshot_id;
-- name: sys_snapshots_count
SELECT count(*), max(snapshot_id) FROM paimon.shapes.`p$snapshots`;
-- name: sys_options_a ci
SELECT key, value FROM shapes.`a$options` ORDER BY key;
-- name: sys_options_orders
SELECT key, value FROM tpch.`orders$options` WHERE key LIKE 'file-index%' ORDER BY key;
-- name: sys_schemas
SELECT schema_id, partition_keys, primary_keys FROM shapes.`k$schemas`;
-- name: sys_schemas_p
SELECT schema_id, partition_keys, primary_keys FROM shapes.`p$schemas`;
-- name: sys_files_a ci
SELECT file_path, record_count, file_size_in_bytes, level FROM shapes.`a$files` ORDER BY file_path;
-- name: sys_files_count
SELECT count(*), sum(record_count) FROM tpch.`lineitem$files`;
-- name: sys_files_p
SELECT partition, bucket, record_count FROM shapes.`p$files`;
-- name: sys_tags_empty
SELECT * FROM shapes.`a$tags`;
-- name: sys_manifests_count
SELECT count(*) > 0 FROM shapes.`a$manifests`;
-- name: tt_version_1 ci
SELECT count(*) FROM shapes.a VERSION AS OF 1;
-- name: tt_version_3
SELECT count(*), sum(n) FROM shapes.a VERSION AS OF 3;
-- name: tt_version_before_delete
SELECT id FROM shapes.a VERSION AS OF 3 WHERE c = 3 OR s = 'date';
-- name: tt_version_k ci
SELECT id, n FROM shapes.k VERSION AS OF 3 WHERE id BETWEEN 40 AND 50;
-- name: tt_version_k_upsert
SELECT id, n FROM shapes.k VERSION AS OF 4 WHERE id BETWEEN 40 AND 50;
-- name: tt_system_version
SELECT count(*) FROM shapes.k FOR SYSTEM_VERSION AS OF 2;
-- name: tt_version_lineitem
SELECT count(*) FROM tpch.lineitem VERSION AS OF 4 WHERE l_shipmode = 'REG AIR' AND l_quantity < 3;
-- name: tt_timestamp_future ci
SELECT count(*) FROM shapes.a TIMESTAMP AS OF '2099-01-01 00:00:00';
-- name: tt_timestamp_past
SELECT count(*) FROM shapes.a TIMESTAMP AS OF '2000-01-01 00:00:00';
-- name: tt_version_missing
SELECT count(*) FROM shapes.a VERSION AS OF 99;
-- name: tt_join_versions
SELECT count(*) FROM shapes.a VERSION AS OF 3 x JOIN shapes.a y ON x.id = y.id;
-- name: show_tables ci
SHOW TABLES IN shapes;
-- name: show_tables_tpch
SHOW TABLES IN tpch;
-- name: describe_a
DESCRIBE shapes.a;
-- name: describe_lineitem
DESCRIBE tpch.lineitem;
-- name: missing_table ci
SELECT * FROM shapes.nope;
-- name: missing_column
SELECT nope FROM shapes.a;

-- The differential query shapes over the shapes database (tests/sqlref/shapes.py): every index kind,
-- append (a), primary-key with deletion vectors (k) and partitioned (p) tables, NaN/+-0.0/NULL/DECIMAL.

-- name: eq_bloom ci
SELECT * FROM shapes.a WHERE id = 42;
-- name: eq_bloom_absent
SELECT * FROM shapes.a WHERE id = 100000;
-- name: eq_bitmap_int
SELECT id, c FROM shapes.a WHERE c = 12;
-- name: eq_bitmap_str ci
SELECT id, s FROM shapes.a WHERE s = 'apple';
-- name: eq_bitmap_empty_str
SELECT count(*) FROM shapes.a WHERE s = '';
-- name: eq_bitmap_case
SELECT id FROM shapes.a WHERE s = 'Apple';
-- name: eq_bool
SELECT count(*) FROM shapes.a WHERE b = true;
-- name: eq_bool_false
SELECT id FROM shapes.a WHERE NOT b;
-- name: in_bitmap ci
SELECT id, c FROM shapes.a WHERE c IN (1, 12, 25, 99);
-- name: in_str
SELECT id, s FROM shapes.a WHERE s IN ('banana', 'cherry');
-- name: in_with_null
SELECT id FROM shapes.a WHERE c IN (1, NULL);
-- name: not_in
SELECT id, c FROM shapes.a WHERE c NOT IN (1, 2, 3, 11, 12);
-- name: not_in_null ci
SELECT count(*) FROM shapes.a WHERE c NOT IN (1, NULL);
-- name: not_in_str
SELECT count(*) FROM shapes.a WHERE s NOT IN ('apple', '');
-- name: is_null_c ci
SELECT id FROM shapes.a WHERE c IS NULL;
-- name: is_not_null_s
SELECT count(*) FROM shapes.a WHERE s IS NOT NULL;
-- name: is_null_dec
SELECT id FROM shapes.a WHERE dec IS NULL;
-- name: is_null_d
SELECT id FROM shapes.a WHERE d IS NULL;
-- name: range_int
SELECT id, c FROM shapes.a WHERE c > 15 AND c <= 22;
-- name: between_int
SELECT count(*) FROM shapes.a WHERE c BETWEEN 5 AND 14;
-- name: range_id
SELECT id FROM shapes.a WHERE id >= 78 AND id < 83;
-- name: range_date ci
SELECT id, dt FROM shapes.a WHERE dt >= date '2024-02-10' AND dt < date '2024-02-15';
-- name: range_date_gt
SELECT count(*) FROM shapes.a WHERE dt > date '2024-03-20';
-- name: dec_eq
SELECT id, dec FROM shapes.a WHERE dec = 1.00;
-- name: dec_range ci
SELECT id, dec FROM shapes.a WHERE dec > 100.5 AND dec < 300;
-- name: dec_neg
SELECT id, dec FROM shapes.a WHERE dec < -400;
-- name: dec_sum
SELECT sum(dec), avg(dec), min(dec), max(dec) FROM shapes.a;
-- name: dbl_eq_zero
SELECT id, d FROM shapes.a WHERE d = 0.0;
-- name: dbl_eq_negzero ci
SELECT id FROM shapes.a WHERE d = -0.0;
-- name: dbl_nan_eq ci
SELECT id FROM shapes.a WHERE d = double('NaN');
-- name: dbl_isnan
SELECT id FROM shapes.a WHERE isnan(d);
-- name: dbl_gt
SELECT id, d FROM shapes.a WHERE d > 60;
-- name: dbl_lt
SELECT id, d FROM shapes.a WHERE d < -40;
-- name: dbl_inf ci
SELECT id, d FROM shapes.a WHERE d = double('Infinity') OR d = double('-Infinity');
-- name: dbl_range_open
SELECT count(*) FROM shapes.a WHERE d >= 0;
-- name: dbl_agg
SELECT count(d), min(d), max(d) FROM shapes.a WHERE NOT isnan(d);
-- name: dbl_group
SELECT d, count(*) FROM shapes.a WHERE id % 4 = 0 GROUP BY d;
-- name: or_two_columns ci
SELECT id FROM shapes.a WHERE c = 5 OR s = 'cherry';
-- name: or_id_bitmap
SELECT id FROM shapes.a WHERE id = 3 OR c = 27;
-- name: or_range
SELECT id FROM shapes.a WHERE dt < date '2024-01-05' OR dec > 450;
-- name: and_or_mix
SELECT id FROM shapes.a WHERE (c = 1 OR c = 22) AND (s IS NULL OR b);
-- name: not_eq
SELECT count(*) FROM shapes.a WHERE c <> 12;
-- name: not_paren
SELECT count(*) FROM shapes.a WHERE NOT (c = 12 OR s = 'apple');
-- name: like_prefix
SELECT id, s FROM shapes.a WHERE s LIKE 'ch%';
-- name: like_any
SELECT count(*) FROM shapes.a WHERE s LIKE '%an%';
-- name: arith_where ci
SELECT id FROM shapes.a WHERE id % 7 = 0 AND c < 20;
-- name: func_where
SELECT id FROM shapes.a WHERE upper(s) = 'APPLE';
-- name: coalesce_where
SELECT count(*) FROM shapes.a WHERE coalesce(c, -1) = -1;
-- name: null_safe_eq
SELECT id FROM shapes.a WHERE c <=> NULL;
-- name: count_all
SELECT count(*) FROM shapes.a;
-- name: count_k ci
SELECT count(*) FROM shapes.k;
-- name: count_p
SELECT count(*) FROM shapes.p;
-- name: select_star_k
SELECT * FROM shapes.k;
-- name: select_star_a
SELECT * FROM shapes.a;
-- name: k_eq
SELECT * FROM shapes.k WHERE id = 45;
-- name: k_upserted ci
SELECT id, n FROM shapes.k WHERE n >= 1000;
-- name: k_deleted ci
SELECT id FROM shapes.k WHERE c = 21 OR id = 7;
-- name: k_range
SELECT id, c, s FROM shapes.k WHERE id BETWEEN 35 AND 60;
-- name: k_bitmap
SELECT id FROM shapes.k WHERE s = 'banana' AND c > 10;
-- name: k_dec
SELECT id, dec FROM shapes.k WHERE dec >= 0 AND dec < 50;
-- name: k_nan
SELECT id FROM shapes.k WHERE isnan(d) OR d IS NULL;
-- name: p_partition
SELECT count(*) FROM shapes.p WHERE region = 'eu';
-- name: p_partition_and ci
SELECT id FROM shapes.p WHERE region = 'us' AND c BETWEEN 10 AND 15;
-- name: p_partition_or
SELECT id FROM shapes.p WHERE region = 'us' OR id < 3;
-- name: p_group
SELECT region, count(*), sum(n), max(dt) FROM shapes.p GROUP BY region;
-- name: group_by
SELECT s, count(*), sum(n), min(id), max(id) FROM shapes.a GROUP BY s;
-- name: group_having
SELECT c, count(*) AS cnt FROM shapes.a GROUP BY c HAVING count(*) > 2;
-- name: group_bool
SELECT b, count(*) FROM shapes.a GROUP BY b;
-- name: distinct
SELECT DISTINCT s FROM shapes.a;
-- name: count_distinct
SELECT count(DISTINCT c), count(DISTINCT s) FROM shapes.k;
-- name: order_limit
SELECT id, c FROM shapes.a ORDER BY id DESC LIMIT 5;
-- name: order_limit_where ci
SELECT id, dec FROM shapes.a WHERE c > 3 ORDER BY dec DESC NULLS LAST, id LIMIT 7;
-- name: order_dbl
SELECT id, d FROM shapes.a WHERE id < 30 ORDER BY d, id;
-- name: order_limit_k
SELECT id, n FROM shapes.k ORDER BY n DESC NULLS FIRST, id LIMIT 10;
-- name: order_limit_dt
SELECT id, dt FROM shapes.p ORDER BY dt DESC, id LIMIT 4;
-- name: order_offset
SELECT id FROM shapes.a ORDER BY id LIMIT 5 OFFSET 10;
-- name: join_inner
SELECT a.id, d.label FROM shapes.a a JOIN shapes.dim d ON a.c = d.c WHERE a.s = 'banana';
-- name: join_left ci
SELECT a.id, d.label FROM shapes.a a LEFT JOIN shapes.dim d ON a.c = d.c WHERE a.id < 40;
-- name: join_left_on_filter
SELECT a.id, d.label FROM shapes.a a LEFT JOIN shapes.dim d ON a.c = d.c AND d.label = 'L4';
-- name: join_right
SELECT a.id, d.c, d.label FROM shapes.a a RIGHT JOIN shapes.dim d ON a.c = d.c AND a.s = 'apple';
-- name: join_full ci
SELECT a.id, d.c FROM shapes.a a FULL OUTER JOIN shapes.dim d ON a.c = d.c AND a.id > 60;
-- name: join_semi
SELECT id FROM shapes.a LEFT SEMI JOIN shapes.dim ON shapes.a.c = shapes.dim.c;
-- name: join_anti ci
SELECT id, c FROM shapes.a LEFT ANTI JOIN shapes.dim ON shapes.a.c = shapes.dim.c;
-- name: join_cross_filter
SELECT a.id, k.id FROM shapes.a a, shapes.k k WHERE a.id = k.id AND a.c = 5;
-- name: self_join ci
SELECT x.id, y.id FROM shapes.a x JOIN shapes.a y ON x.c = y.c AND x.id < y.id WHERE x.s = 'apple';
-- name: self_join_k
SELECT x.id, y.n FROM shapes.k x JOIN shapes.k y ON x.id = y.id + 40 WHERE y.c < 5;
-- name: join_a_k
SELECT a.id, a.n, k.n FROM shapes.a a JOIN shapes.k k ON a.id = k.id WHERE k.n >= 1000;
-- name: join_a_k_full
SELECT count(*), count(a.id), count(k.id) FROM shapes.a a FULL JOIN shapes.k k ON a.id = k.id;
-- name: join_p_dim
SELECT p.region, d.label, count(*) FROM shapes.p p JOIN shapes.dim d ON p.c = d.c GROUP BY p.region, d.label;
-- name: join_three
SELECT a.id, k.s, d.label FROM shapes.a a JOIN shapes.k k ON a.id = k.id JOIN shapes.dim d ON k.c = d.c WHERE a.dec > 0;
-- name: subquery_in
SELECT id FROM shapes.a WHERE c IN (SELECT c FROM shapes.dim WHERE label LIKE 'L1%');
-- name: subquery_not_in
SELECT count(*) FROM shapes.a WHERE c NOT IN (SELECT c FROM shapes.dim WHERE c IS NOT NULL);
-- name: subquery_not_in_nulls ci
SELECT count(*) FROM shapes.a WHERE c NOT IN (SELECT c FROM shapes.dim);
-- name: subquery_exists
SELECT id FROM shapes.a a WHERE EXISTS (SELECT 1 FROM shapes.k k WHERE k.id = a.id AND k.n >= 1000);
-- name: subquery_not_exists
SELECT count(*) FROM shapes.a a WHERE NOT EXISTS (SELECT 1 FROM shapes.k k WHERE k.id = a.id);
-- name: subquery_scalar
SELECT id, c FROM shapes.a WHERE c = (SELECT max(c) FROM shapes.k);
-- name: subquery_from
SELECT s, cnt FROM (SELECT s, count(*) AS cnt FROM shapes.a WHERE c < 20 GROUP BY s) t WHERE cnt > 1;
-- name: subquery_from_filter_outside
SELECT id FROM (SELECT id, c FROM shapes.a) t WHERE t.c = 22;
-- name: subquery_limit_then_filter
SELECT id FROM (SELECT id, c FROM shapes.a ORDER BY id LIMIT 20) t WHERE t.c = 5;
-- name: cte_simple
WITH x AS (SELECT id, c FROM shapes.a WHERE s = 'cherry') SELECT count(*), sum(c) FROM x;
-- name: cte_twice ci
WITH x AS (SELECT id, c FROM shapes.a) SELECT count(*) FROM x x1 JOIN x x2 ON x1.id = x2.c;
-- name: cte_filter_outside
WITH x AS (SELECT * FROM shapes.k) SELECT id FROM x WHERE c = 14;
-- name: cte_shadow
WITH a AS (SELECT 1 AS id) SELECT * FROM a;
-- name: union_all ci
SELECT id FROM shapes.a WHERE c = 1 UNION ALL SELECT id FROM shapes.k WHERE c = 1;
-- name: union_distinct
SELECT s FROM shapes.a UNION SELECT s FROM shapes.k;
-- name: intersect
SELECT id FROM shapes.a INTERSECT SELECT id FROM shapes.k;
-- name: except
SELECT id FROM shapes.a EXCEPT SELECT id FROM shapes.k;
-- name: union_order
SELECT id FROM shapes.a WHERE c = 2 UNION ALL SELECT id FROM shapes.p WHERE c = 2 ORDER BY id;
-- name: window_row_number ci
SELECT id, c, row_number() OVER (PARTITION BY c ORDER BY id) AS rn FROM shapes.a WHERE c < 5;
-- name: window_sum
SELECT id, sum(n) OVER (PARTITION BY s ORDER BY id ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS run FROM shapes.k;
-- name: window_rank_dec
SELECT id, rank() OVER (ORDER BY dec DESC NULLS LAST) AS r FROM shapes.a WHERE dec IS NOT NULL AND c > 20;
-- name: window_lag
SELECT id, lag(c) OVER (ORDER BY id) AS prev FROM shapes.p WHERE region = 'eu';
-- name: window_filter_outside
SELECT * FROM (SELECT id, c, row_number() OVER (PARTITION BY s ORDER BY id) AS rn FROM shapes.a) t WHERE rn = 1;
-- name: case_expr
SELECT CASE WHEN c < 10 THEN 'low' WHEN c < 20 THEN 'mid' ELSE 'high' END AS band, count(*) FROM shapes.a GROUP BY 1;
-- name: qualified_catalog
SELECT count(*) FROM paimon.shapes.a WHERE c = 12;
-- name: mixed_case_names
SELECT ID, C FROM SHAPES.A WHERE C = 12;
-- name: backticks
SELECT `id` FROM `shapes`.`a` WHERE `s` = 'date';
-- name: no_table
SELECT 1 + 1 AS two, 'x' AS s;
-- name: values_join
SELECT a.id FROM shapes.a a JOIN (VALUES (1), (2), (12)) AS v(c) ON a.c = v.c;
-- name: cast_where
SELECT id FROM shapes.a WHERE CAST(c AS STRING) = '12';
-- name: dt_func
SELECT month(dt), count(*) FROM shapes.a GROUP BY month(dt);
-- name: column_aliases ci
SELECT c, id FROM shapes.a AS x(c, id, s, b, d, dec, dt, n) WHERE c < 30 AND id = 12 ORDER BY c;
-- name: pivot
SELECT * FROM (SELECT s, c FROM shapes.a WHERE c < 4) PIVOT (count(*) FOR c IN (1, 2, 3)) ORDER BY s;
-- name: pivot_on_table ci
SELECT * FROM shapes.p PIVOT (count(id) AS n, max(c) AS m FOR region IN ('eu', 'us'));
-- name: unpivot
SELECT col, count(*), sum(val) FROM shapes.k UNPIVOT (val FOR col IN (id, n)) GROUP BY col;
-- name: tablesample_none ci
SELECT count(*) FROM shapes.a TABLESAMPLE (0 PERCENT) WHERE c = 12;
-- name: tablesample_rows
SELECT count(*) FROM shapes.k TABLESAMPLE (3 ROWS);
-- name: paren_join
SELECT count(*), count(k.id) FROM (shapes.a a LEFT JOIN shapes.k k ON a.id = k.id) WHERE a.c < 12;

/*
 * ChangelogOracle: Java Paimon's incremental changelog read, for tests/table/test_changelog.py.
 *
 *   java -cp <classes>:paimon-oracle.jar:<spark jars>/* ChangelogOracle requests.jsonl
 *
 * Each line of requests.jsonl, {"warehouse": W, "table": "db.t", "from": a, "to": b}, reads table
 * db.t of warehouse W with 'incremental-between' = 'a,b' and 'incremental-between-scan-mode' =
 * 'changelog' (the changelog files of snapshots a+1 .. b, OVERWRITE snapshots skipped, as Paimon's
 * incremental readers see them) and prints one JSON line: {"rows": [["+I", v1, v2, ...], ...]}
 * (values as PaimonOracle.toJson prints them), or {"error": ...}.
 *
 * With "mode": "stream" the same rows come from Paimon's streaming read instead
 * (DataTableStreamScan from snapshot a+1, plan after plan until the next snapshot is past b): it
 * reads a snapshot's changelog from changelog/changelog-N once the snapshot has expired under a
 * decoupled changelog lifecycle (NextSnapshotFetcher), which the batch incremental read does not.
 * "scan": "delta" reads the batch incremental read's delta instead (incremental-between-scan-mode
 * = delta: the files APPEND snapshots add, with their row kinds; COMPACT and OVERWRITE skipped).
 * With "mode": "expire" it runs what Java runs after a commit (AbstractFileStoreTable
 * .newExpireRunnable): ExpireSnapshots with the table's ExpireConfig, then ExpireChangelog when
 * the changelog lifecycle is decoupled, and prints {"expired": n, "changelogs_expired": m}.
 * Compiled at test time against paimon-oracle.jar (PaimonOracle's helpers are in the same default
 * package).
 */
import org.apache.paimon.catalog.Catalog;
import org.apache.paimon.catalog.Identifier;
import org.apache.paimon.data.InternalRow;
import org.apache.paimon.reader.RecordReader;
import org.apache.paimon.table.FileStoreTable;
import org.apache.paimon.table.source.ReadBuilder;
import org.apache.paimon.table.source.Split;
import org.apache.paimon.types.DataField;
import org.apache.paimon.types.RowType;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

public class ChangelogOracle {
    public static void main(String[] argv) throws Exception {
        for (String line : Files.readAllLines(Paths.get(argv[0]))) {
            if (line.trim().isEmpty()) {
                continue;
            }
            JsonNode request = PaimonOracle.JSON.readTree(line);
            ObjectNode out = PaimonOracle.JSON.createObjectNode();
            try {
                Map<String, String> a = new HashMap<>();
                a.put("warehouse", request.get("warehouse").asText());
                Catalog catalog = PaimonOracle.catalog(a);
                FileStoreTable base = (FileStoreTable) catalog.getTable(
                        Identifier.fromString(request.get("table").asText()));
                String mode = request.has("mode") ? request.get("mode").asText() : "batch";
                if (mode.equals("expire")) {
                    org.apache.paimon.CoreOptions options = base.coreOptions();
                    out.put("expired", base.newExpireSnapshots().config(options.expireConfig()).expire());
                    out.put("changelogs_expired", options.changelogLifecycleDecoupled()
                            ? base.newExpireChangelog().config(options.expireConfig()).expire() : 0);
                } else if (mode.equals("stream")) {
                    out.set("rows", stream(base, request.get("from").asLong(), request.get("to").asLong()));
                } else {
                    String scan = request.has("scan") ? request.get("scan").asText() : "changelog";
                    out.set("rows", changelog(base, request.get("from").asText(), request.get("to").asText(),
                            scan));
                }
            } catch (Exception e) {
                out.put("error", e.toString());
            }
            System.out.println(PaimonOracle.JSON.writeValueAsString(out));
        }
    }

    static ArrayNode stream(FileStoreTable base, long from, long to) throws Exception {
        Map<String, String> dyn = new HashMap<>();
        dyn.put("scan.mode", "from-snapshot");
        dyn.put("scan.snapshot-id", String.valueOf(from + 1));
        FileStoreTable t = base.copy(dyn);
        RowType rowType = t.rowType();
        List<DataField> fields = rowType.getFields();
        InternalRow.FieldGetter[] getters = PaimonOracle.getters(rowType);
        ReadBuilder rb = t.newReadBuilder();
        org.apache.paimon.table.source.StreamTableScan scan = rb.newStreamScan();
        ArrayNode rows = PaimonOracle.JSON.createArrayNode();
        for (int round = 0; round < 3 * (to - from) + 10; round++) {
            Long next = scan.checkpoint();
            if (next != null && next > to) {
                break;
            }
            List<Split> splits = scan.plan().splits();
            if (splits.isEmpty()) {
                continue;
            }
            read(rb, splits, fields, getters, rows);
        }
        return rows;
    }

    static void read(ReadBuilder rb, List<Split> splits, List<DataField> fields,
                     InternalRow.FieldGetter[] getters, ArrayNode rows) throws Exception {
        try (RecordReader<InternalRow> r = rb.newRead().createReader(splits)) {
            RecordReader.RecordIterator<InternalRow> batch;
            while ((batch = r.readBatch()) != null) {
                InternalRow row;
                while ((row = batch.next()) != null) {
                    ArrayNode arr = PaimonOracle.JSON.createArrayNode();
                    arr.add(row.getRowKind().shortString());
                    arr.addAll(PaimonOracle.toJson(row, fields, getters));
                    rows.add(arr);
                }
                batch.releaseBatch();
            }
        }
    }

    static ArrayNode changelog(FileStoreTable base, String from, String to, String scan) throws Exception {
        Map<String, String> dyn = new HashMap<>();
        dyn.put("incremental-between", from + "," + to);
        dyn.put("incremental-between-scan-mode", scan);
        FileStoreTable t = base.copy(dyn);
        RowType rowType = t.rowType();
        List<DataField> fields = rowType.getFields();
        InternalRow.FieldGetter[] getters = PaimonOracle.getters(rowType);
        ReadBuilder rb = t.newReadBuilder();
        List<Split> splits = rb.newScan().plan().splits();
        ArrayNode rows = PaimonOracle.JSON.createArrayNode();
        read(rb, splits, fields, getters, rows);
        return rows;
    }
}

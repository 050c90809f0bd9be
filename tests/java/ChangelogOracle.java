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
                out.set("rows", changelog(base, request.get("from").asText(), request.get("to").asText()));
            } catch (Exception e) {
                out.put("error", e.toString());
            }
            System.out.println(PaimonOracle.JSON.writeValueAsString(out));
        }
    }

    static ArrayNode changelog(FileStoreTable base, String from, String to) throws Exception {
        Map<String, String> dyn = new HashMap<>();
        dyn.put("incremental-between", from + "," + to);
        dyn.put("incremental-between-scan-mode", "changelog");
        FileStoreTable t = base.copy(dyn);
        RowType rowType = t.rowType();
        List<DataField> fields = rowType.getFields();
        InternalRow.FieldGetter[] getters = PaimonOracle.getters(rowType);
        ReadBuilder rb = t.newReadBuilder();
        List<Split> splits = rb.newScan().plan().splits();
        ArrayNode rows = PaimonOracle.JSON.createArrayNode();
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
        return rows;
    }
}

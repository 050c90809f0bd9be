/*
 * ChangelogOracle: Java Paimon's incremental changelog read, for tests/table/test_changelog.py.
 *
 *   java -cp <classes>:paimon-oracle.jar:<spark jars>/* ChangelogOracle W db.t FROM TO
 *
 * Reads table db.t of warehouse W with 'incremental-between' = 'FROM,TO' and
 * 'incremental-between-scan-mode' = 'changelog' (the changelog files of snapshots FROM+1 .. TO, as
 * Paimon's streaming/incremental readers see them) and prints one JSON object:
 * {"rows": [["+I", v1, v2, ...], ...]} (values as PaimonOracle.toJson prints them).
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

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.util.HashMap;
import java.util.List;
import java.util.Map;

public class ChangelogOracle {
    public static void main(String[] argv) throws Exception {
        Map<String, String> a = new HashMap<>();
        a.put("warehouse", argv[0]);
        Catalog catalog = PaimonOracle.catalog(a);
        FileStoreTable base = (FileStoreTable) catalog.getTable(Identifier.fromString(argv[1]));
        ObjectNode out = PaimonOracle.JSON.createObjectNode();
        out.set("rows", changelog(base, argv[2], argv[3]));
        System.out.println(PaimonOracle.JSON.writeValueAsString(out));
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

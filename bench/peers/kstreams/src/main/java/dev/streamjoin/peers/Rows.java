package dev.streamjoin.peers;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.Serializer;

/**
 * Rows as the app holds them: a record is a long[] of its fields in the plan's order (ts first),
 * a joined row the concatenation of its members'. Inputs are JSON objects of integers (parsed
 * with Jackson's streaming parser); rows cross repartition topics and state stores as 8 bytes per
 * field; results leave as JSON.
 */
final class Rows {

    private static final JsonFactory JSON = new JsonFactory();

    private Rows() {}

    /** A deserializer of one input's JSON records into rows of `fields`. */
    static Deserializer<long[]> json(List<String> fields) {
        return (topic, bytes) -> {
            long[] row = new long[fields.size()];
            try (JsonParser parser = JSON.createParser(bytes)) {
                if (parser.nextToken() != JsonToken.START_OBJECT) {
                    throw new IllegalArgumentException("not a JSON object on " + topic);
                }
                while (parser.nextToken() == JsonToken.FIELD_NAME) {
                    int index = fields.indexOf(parser.currentName());
                    parser.nextToken();
                    if (index >= 0) {
                        row[index] = parser.getLongValue();
                    } else {
                        parser.skipChildren();
                    }
                }
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
            return row;
        };
    }

    /** The serde of rows in repartition topics and state stores. */
    static Serde<long[]> binary() {
        Serializer<long[]> serializer = (topic, row) -> {
            ByteBuffer buffer = ByteBuffer.allocate(8 * row.length);
            for (long value : row) {
                buffer.putLong(value);
            }
            return buffer.array();
        };
        Deserializer<long[]> deserializer = (topic, bytes) -> {
            ByteBuffer buffer = ByteBuffer.wrap(bytes);
            long[] row = new long[bytes.length / 8];
            for (int i = 0; i < row.length; i++) {
                row[i] = buffer.getLong();
            }
            return row;
        };
        return Serdes.serdeFrom(serializer, deserializer);
    }

    /** Concatenate the result so far and the new record. */
    static long[] concat(long[] left, long[] right) {
        long[] row = new long[left.length + right.length];
        System.arraycopy(left, 0, row, 0, left.length);
        System.arraycopy(right, 0, row, left.length, right.length);
        return row;
    }

    /** The result as JSON: `{"ts": <youngest member's ts>, "<stream>": {<fields>}, ...}`. */
    static byte[] resultJson(JoinPlan plan, long[] row) {
        long ts = Long.MIN_VALUE;
        for (JoinPlan.Input input : plan.inputs) {
            ts = Math.max(ts, row[input.offset()]);
        }
        StringBuilder out = new StringBuilder(32 * row.length).append("{\"ts\":").append(ts);
        for (JoinPlan.Input input : plan.inputs) {
            out.append(",\"").append(input.name()).append("\":{");
            List<String> fields = input.fields();
            for (int i = 0; i < fields.size(); i++) {
                out.append(i == 0 ? "\"" : ",\"").append(fields.get(i)).append("\":").append(row[input.offset() + i]);
            }
            out.append('}');
        }
        return out.append('}').toString().getBytes(StandardCharsets.UTF_8);
    }
}

package dev.streamjoin.peers;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.JoinWindows;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.StreamJoined;
import org.apache.kafka.streams.state.Stores;

/**
 * The peer benchmark's n-way join in Kafka Streams: a left-deep chain of KStream-KStream joins
 * with JoinWindows, one per input after the first, writing every result to the output topic.
 *
 * <p>Usage: {@code java -cp ... dev.streamjoin.peers.PeersJoin PLAN.properties} (the plan is
 * written by bench/peers/kstreams_app.py; its {@code streams.*} entries are StreamsConfig). Each
 * join bounds the new record against the result so far, whose timestamp Kafka Streams sets to its
 * youngest member's; with {@code semantics=pairwise} a filter after each join then keeps only the
 * combinations inside every member's own window (streamjoin's range windows), with
 * {@code semantics=chained} the join windows alone decide. Runs until stopped (SIGTERM).
 */
public final class PeersJoin {

    private PeersJoin() {}

    public static void main(String[] args) throws Exception {
        JoinPlan plan = JoinPlan.read(Path.of(args[0]));
        KafkaStreams streams = new KafkaStreams(topology(plan), streamsConfig(plan));
        CountDownLatch stopped = new CountDownLatch(1);
        streams.setUncaughtExceptionHandler(error -> {
            error.printStackTrace();
            return StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        });
        streams.setStateListener((now, before) -> {
            if (now == KafkaStreams.State.ERROR || now == KafkaStreams.State.NOT_RUNNING) {
                stopped.countDown();
            }
        });
        Runtime.getRuntime().addShutdownHook(new Thread(() -> streams.close(Duration.ofSeconds(10))));
        streams.start();
        stopped.await();
        System.exit(streams.state() == KafkaStreams.State.ERROR ? 1 : 0);
    }

    static Properties streamsConfig(JoinPlan plan) {
        Properties config = new Properties();
        for (String name : plan.config.stringPropertyNames()) {
            if (name.startsWith("streams.")) {
                config.put(name.substring("streams.".length()), plan.config.getProperty(name));
            }
        }
        return config;
    }

    static Topology topology(JoinPlan plan) {
        StreamsBuilder builder = new StreamsBuilder();
        Serde<long[]> rows = Rows.binary();
        KStream<String, long[]> joined = source(builder, plan.inputs.get(0), rows);
        for (JoinPlan.Step step : plan.steps) {
            KStream<String, long[]> other = source(builder, step.input(), rows);
            if (step.rekey()) {
                int keyField = step.equalities().get(0).oldIndex();
                joined = joined.selectKey((key, row) -> Long.toString(row[keyField]));
            }
            joined = joined.join(other, Rows::concat, windows(step, plan.graceMs), stores(plan, step, rows));
            if (plan.pairwise || step.equalities().size() > 1) {
                JoinPlan.Input last = step.input();
                joined = joined.filter((key, row) -> keep(plan, last, row));
            }
        }
        joined.mapValues(row -> Rows.resultJson(plan, row))
                .to(plan.outputTopic, Produced.with(Serdes.String(), Serdes.ByteArray()));
        return builder.build();
    }

    private static KStream<String, long[]> source(StreamsBuilder builder, JoinPlan.Input input, Serde<long[]> rows) {
        Serde<long[]> json = Serdes.serdeFrom(rows.serializer(), Rows.json(input.fields()));
        return builder.stream(
                input.topic(),
                Consumed.with(Serdes.String(), json)
                        .withTimestampExtractor((record, previous) -> ((long[]) record.value())[0])
                        .withName("source-" + input.name()));
    }

    private static JoinWindows windows(JoinPlan.Step step, long graceMs) {
        long difference = Math.max(step.beforeMs(), step.afterMs());
        return JoinWindows.ofTimeDifferenceAndGrace(Duration.ofMillis(difference), Duration.ofMillis(graceMs))
                .before(Duration.ofMillis(step.beforeMs()))
                .after(Duration.ofMillis(step.afterMs()));
    }

    private static StreamJoined<String, long[], long[]> stores(JoinPlan plan, JoinPlan.Step step, Serde<long[]> rows) {
        String name = "join-" + step.input().name();
        StreamJoined<String, long[], long[]> joined = StreamJoined.with(Serdes.String(), rows, rows)
                .withName(name)
                .withStoreName(name);
        if (!plan.inMemory) {
            return joined;
        }
        Duration size = Duration.ofMillis(step.beforeMs() + step.afterMs());
        Duration retention = size.plusMillis(plan.graceMs);
        return joined
                .withThisStoreSupplier(Stores.inMemoryWindowStore(name + "-this", retention, size, true))
                .withOtherStoreSupplier(Stores.inMemoryWindowStore(name + "-other", retention, size, true));
    }

    /**
     * Whether a row joined up to `last` satisfies every equality of its steps beyond the join key
     * and (pairwise semantics) every member's own window: youngest ts - member ts <= its window.
     */
    static boolean keep(JoinPlan plan, JoinPlan.Input last, long[] row) {
        for (JoinPlan.Step step : plan.steps) {
            for (JoinPlan.Equality e : step.equalities().subList(1, step.equalities().size())) {
                if (row[e.oldIndex()] != row[step.input().offset() + e.newIndex()]) {
                    return false;
                }
            }
            if (step.input() == last) {
                break;
            }
        }
        if (!plan.pairwise) {
            return true;
        }
        long youngest = Long.MIN_VALUE;
        for (JoinPlan.Input input : plan.inputs) {
            youngest = Math.max(youngest, row[input.offset()]);
            if (input == last) {
                break;
            }
        }
        for (JoinPlan.Input input : plan.inputs) {
            if (youngest - row[input.offset()] > input.windowMs()) {
                return false;
            }
            if (input == last) {
                break;
            }
        }
        return true;
    }
}

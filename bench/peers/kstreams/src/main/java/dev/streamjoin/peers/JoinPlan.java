package dev.streamjoin.peers;

import java.io.IOException;
import java.io.Reader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Properties;

/**
 * The join as the bench writes it (bench/peers/kstreams_plan.py): the inputs in chain order, each
 * with its topic, fields (ts first) and range window, and for every input after the first the
 * equalities that join it to the inputs before it and its window bounds against the result so far.
 * Read once at start-up; immutable.
 */
final class JoinPlan {

    /** One input: its name, topic, fields (ts first), range window and offset in a joined row. */
    record Input(String name, String topic, List<String> fields, long windowMs, int offset) {}

    /** `old.oldField = new.newField`, as indexes into the joined row and the new input's row. */
    record Equality(int oldIndex, int newIndex) {}

    /**
     * Join `input` to the inputs before it: the first equality is the join key (the result so far
     * is re-keyed by its old side when that differs from the current key), the others are checked
     * after the join; the new record lies in [result ts - beforeMs, result ts + afterMs].
     */
    record Step(Input input, List<Equality> equalities, long beforeMs, long afterMs, boolean rekey) {}

    final Properties config;
    final List<Input> inputs;
    final List<Step> steps;
    final String outputTopic;
    final boolean pairwise;
    final long graceMs;
    final boolean inMemory;

    private JoinPlan(Properties p) {
        config = p;
        outputTopic = p.getProperty("output.topic");
        pairwise = p.getProperty("semantics", "pairwise").equals("pairwise");
        graceMs = Long.parseLong(p.getProperty("grace.ms"));
        inMemory = p.getProperty("store", "memory").equals("memory");
        inputs = new ArrayList<>();
        int offset = 0;
        for (String name : p.getProperty("streams").split(",")) {
            List<String> fields = Arrays.asList(p.getProperty("stream." + name + ".fields").split(","));
            long window = Long.parseLong(p.getProperty("stream." + name + ".window.ms"));
            inputs.add(new Input(name, p.getProperty("stream." + name + ".topic"), fields, window, offset));
            offset += fields.size();
        }
        steps = new ArrayList<>();
        for (Input input : inputs.subList(1, inputs.size())) {
            String at = "step." + input.name() + ".";
            List<Equality> equalities = new ArrayList<>();
            for (String e : p.getProperty(at + "equalities").split(";")) {
                String[] sides = e.split("=");  // old.field=newField
                String[] old = sides[0].split("\\.");
                Input oldInput = input(old[0]);
                equalities.add(new Equality(
                        oldInput.offset() + oldInput.fields().indexOf(old[1]), input.fields().indexOf(sides[1])));
            }
            steps.add(new Step(
                    input,
                    equalities,
                    Long.parseLong(p.getProperty(at + "before.ms")),
                    Long.parseLong(p.getProperty(at + "after.ms")),
                    Boolean.parseBoolean(p.getProperty(at + "rekey"))));
        }
    }

    static JoinPlan read(Path path) throws IOException {
        Properties p = new Properties();
        try (Reader reader = Files.newBufferedReader(path, StandardCharsets.UTF_8)) {
            p.load(reader);
        }
        return new JoinPlan(p);
    }

    Input input(String name) {
        return inputs.stream().filter(i -> i.name().equals(name)).findFirst().orElseThrow(
                () -> new IllegalArgumentException("unknown stream " + name));
    }

    /** The field of a joined row that holds the key input `input` is joined on (its first equality). */
    int keyField(Input input) {
        for (Step step : steps) {
            if (step.input() == input) {
                return input.offset() + step.equalities().get(0).newIndex();
            }
        }
        // the first input: the old side of the second input's first equality
        return steps.get(0).equalities().get(0).oldIndex();
    }

    /** The width of a row joined up to and including `input`. */
    static int width(Input input) {
        return input.offset() + input.fields().size();
    }
}

"""The soak's CPU figures: which process is which, and cores per minute from cumulative samples."""

from __future__ import annotations

from bench.soak.cpu import _name, cores_by_minute


def test_processes_are_named_by_their_command_line() -> None:
    assert _name(["/root/.calfkit/bin/tansu-v0.6.0", "broker"]) == "broker"
    kafka = ["/usr/lib/jvm/java-17/bin/java", "-Xmx1g", "-cp", "x.jar", "kafka.Kafka", "s.properties"]
    assert _name(kafka) == "broker"
    assert _name(["/usr/lib/jvm/java-17/bin/java", "-jar", "apicurio.jar"]) is None
    assert _name(["/usr/bin/redis-server", "*:0"]) == "redis"
    assert _name(["python", "-c", "...", "joiner", "--bootstrap", "b", "--worker-id", "w2-3-ab12cd"]) == "w2"
    assert _name(["python", "-m", "pytest"]) is None


def test_cores_per_minute_count_each_pid_on_its_own() -> None:
    samples = [
        (0.0, "broker", 10, 0.0), (30.0, "broker", 10, 15.0), (60.0, "broker", 10, 45.0),
        (90.0, "broker", 10, 75.0),
        # w1 killed at 40 s and started again as pid 21, whose CPU starts from 0
        (0.0, "w1", 20, 0.0), (30.0, "w1", 20, 6.0),
        (45.0, "w1", 21, 0.0), (60.0, "w1", 21, 3.0), (90.0, "w1", 21, 9.0),
    ]  # fmt: skip
    cores = cores_by_minute(samples)
    assert cores["broker"] == [0.75, 1.0]
    # minute 0: 6 s over 30 s of pid 20, 3 s over 15 s of pid 21; minute 1: 6 s over 30 s
    assert cores["w1"] == [0.2, 0.2]

"""Peer benchmark: streamjoin against Flink SQL and Spark Structured Streaming on the same files.

`python -m bench.peers --help` from the repository root. The workloads are in `workloads.py`, the
peers' jobs (run in their own virtual environment) in `flink_job.py` and `spark_job.py`, the
measurement of a child process tree in `measure.py`.
"""

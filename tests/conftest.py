"""Fixtures shared by the whole suite: the real embedded broker and Redis (`streamjoin.dev.pytest_plugin`)."""

pytest_plugins = ["streamjoin.dev.pytest_plugin"]

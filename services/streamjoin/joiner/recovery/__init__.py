"""Rebuilding a lost state: progress markers outside Redis, and what was published after them."""

__all__: list[str] = []

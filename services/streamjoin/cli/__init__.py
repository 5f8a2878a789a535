"""The `streamjoin` command line: one module per sub-command, mounted by `main`."""

__all__: list[str] = []

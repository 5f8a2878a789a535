"""Consumer-group membership through Faust, and leaving a group that stalls."""

__all__: list[str] = []

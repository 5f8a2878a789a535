"""
Copyright (c) 2024 Aiven Ltd
See LICENSE for details
"""

from .protopace import check_compatibility, format_proto, IncompatibleError, Proto  # noqa: F401

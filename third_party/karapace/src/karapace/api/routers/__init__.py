"""
Copyright (c) 2024 Aiven Ltd
See LICENSE for details
"""

"""
Karapace's version. Upstream generates this file with setuptools-scm at build time; the vendored
copy (streamjoin's third_party/karapace, see its README.md) keeps it fixed.
"""

__version__ = version = "4.0.0+streamjoin"

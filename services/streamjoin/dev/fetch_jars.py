"""`python -m streamjoin.dev.fetch_jars [NAME...]`: fetch the embedded stack's Java programs once.

The set-up scripts run it so the first test or demo does not wait for Maven; quiet for what is
cached already; exits 1 when a program's jars cannot be had (the message says why).
"""

from __future__ import annotations

import sys

from streamjoin.dev.jars import JarsUnavailableError, classpath, is_cached, programs

__all__ = ["main"]


def main(argv: list[str]) -> int:
    """Resolve the named programs (all of them without names); return 0 when every one is there."""
    status = 0
    for name in argv or programs():
        try:
            if not is_cached(name):
                print(f"==> {name}: fetching its jars from Maven Central (once; cached) ...", flush=True)
                print(f"    {classpath(name)}")
        except JarsUnavailableError as error:
            print(f"{name}: {error}", file=sys.stderr)
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

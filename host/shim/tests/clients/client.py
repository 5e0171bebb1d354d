"""What the Python clients share (as client.h does for the C ones): a client prints one line per
fact, and one "fail ..." line for the test whatever goes wrong, then exits 1."""

import sys


def run(main):
    """Runs the client's main; an exception becomes its one "fail" line."""
    try:
        main()
    except Exception as e:  # one line for the test, whatever went wrong
        print(f"fail {type(e).__name__}: {e}")
        sys.exit(1)

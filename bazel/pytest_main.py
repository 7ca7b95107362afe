"""Entry point of every pytest_test: runs pytest on the files Bazel passes as arguments."""

import os
import sys

import pytest

if __name__ == "__main__":
    # Runfiles are read-only: keep pytest's cache out of them; report in Bazel's XML location.
    args = ["-p", "no:cacheprovider", "-q", "--rootdir", os.getcwd()]
    xml = os.environ.get("XML_OUTPUT_FILE")
    if xml:
        args += ["--junitxml", xml]
    sys.exit(pytest.main(args + sys.argv[1:]))

"""Only the native part of the build; everything else is in pyproject.toml.

remoting._speedups (sources in remoting/native/) holds C twins of the store's per-message loops:
record packing and scanning, Java string hashes, batch decoding, index entries, page warming.
``optional``: without a C compiler the install still succeeds and the pure-Python code runs
(slower); tests/unit/remoting/test_speedups.py says so loudly.
"""

from glob import glob

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "remoting._speedups",
            sorted(glob("remoting/native/*.c")),
            depends=sorted(glob("remoting/native/*.h")),
            extra_compile_args=["-O2", "-Wall", "-Werror=implicit-function-declaration"],
            optional=True,
        )
    ]
)

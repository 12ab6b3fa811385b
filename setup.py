"""Only the native part of the build; everything else is in pyproject.toml.

remoting._speedups holds C twins of the store's per-message loops (record packing, Java string
hashes, batch decoding, index entries). ``optional``: without a C compiler the install still
succeeds and the pure-Python code runs (slower); tests/unit/test_speedups.py says so loudly.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "remoting._speedups",
            ["remoting/_speedups.c"],
            extra_compile_args=["-O2", "-Wall", "-Werror=implicit-function-declaration"],
            optional=True,
        )
    ]
)

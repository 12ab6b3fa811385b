"""Only the native part of the build; everything else is in pyproject.toml.

Three extension modules, each optional and each on its own (a missing compiler or zlib header
leaves the install working, with the pure-Python code; remoting/native_loader.py says so once):

- remoting._codec (remoting/native/codec/): the record codec every process uses; twins of
  remoting/record.py, remoting/message.py and remoting/java_hash.py, and fast paths of
  remoting/command.py (JSON header checks, reply frame heads), remoting/frame.py (the frame
  split of a read) and remoting/send_header.py.
- broker.store._native (broker/store/native/): the store's per-message work; twins of the
  AppendCursor, batch records, ConsumeQueue units, IndexFile entries and a pull's unit scan in
  broker/store/.
- remoting._sender (remoting/native/sender/): the servers' reply-writer thread; no twin
  (without it the event loop writes replies itself).

The first two compile in remoting/native/record_layout.h, the one C definition of the record
layout, and link zlib for the body CRC (the store's takes libdeflate's when it is installed).
"""

from glob import glob
from pathlib import Path

from setuptools import Extension, setup

FLAGS = ["-O2", "-Wall", "-Werror=implicit-function-declaration"]


def extension(name: str, folder: str, **options: object) -> Extension:
    return Extension(
        name,
        sorted(glob(f"{folder}/*.c")),
        depends=sorted(glob(f"{folder}/*.h") + glob("remoting/native/*.h")),
        include_dirs=["remoting/native"],
        extra_compile_args=FLAGS,
        optional=True,
        **options,
    )


def store_options() -> dict[str, object]:
    """The store's body CRC from libdeflate (PCLMUL) when its header is installed (make
    install's apt line: libdeflate-dev), else from zlib (broker/store/native/store.h)."""
    if any(Path(d, "libdeflate.h").exists() for d in ("/usr/include", "/usr/local/include")):
        return {"libraries": ["z", "deflate"], "define_macros": [("HAVE_LIBDEFLATE", "1")]}
    return {"libraries": ["z"]}


setup(
    ext_modules=[
        extension("remoting._codec", "remoting/native/codec", libraries=["z"]),
        extension("broker.store._native", "broker/store/native", **store_options()),
        extension("remoting._sender", "remoting/native/sender"),
    ]
)

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
layout, and link zlib for the body CRC.
"""

from glob import glob

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


setup(
    ext_modules=[
        extension("remoting._codec", "remoting/native/codec", libraries=["z"]),
        extension("broker.store._native", "broker/store/native", libraries=["z"]),
        extension("remoting._sender", "remoting/native/sender"),
    ]
)

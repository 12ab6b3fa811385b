"""The three native extension modules (remoting/native_loader.py): each is built and used
unless switched off, each is checked against the Python definitions it mirrors before it is
used, and a missing, stale or switched-off one falls back to the Python code with one log
line saying why, without turning the others off."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from types import SimpleNamespace

import pytest

from broker.store import store_native
from remoting import codec_native, native_loader, sender

MODULES = {
    "remoting._codec": (codec_native.native, codec_native),
    "broker.store._native": (store_native.native, store_native),
    "remoting._sender": (sender.native_sender(), sender),
}


@pytest.mark.parametrize("name", MODULES)
def test_each_module_is_built_and_used_unless_switched_off(name: str) -> None:
    """`make install` builds them (a C compiler and zlib's header, which the README asks
    for); without them everything still works, several times slower. Only a switch excuses
    one."""
    module, side = MODULES[name]
    if native_loader.switched_off(side.SWITCH):
        assert module is None
    else:
        assert module is not None, f"{name} did not build (gcc? zlib1g-dev?) or is stale"


@pytest.mark.parametrize("name", MODULES)
def test_every_public_name_of_a_module_is_checked_by_its_loader(name: str) -> None:
    module, side = MODULES[name]
    if module is None:
        pytest.skip(f"{name} is switched off")
    exported = {n for n in dir(module) if not n.startswith("_") and not n.isupper()}
    assert exported == set(side.NAMES)
    constants = {n for n in dir(module) if n.isupper()} - {"ABI_VERSION"}
    assert constants == set(getattr(side, "CONSTANTS", {}))


def test_a_build_is_stale_when_its_version_names_or_constants_differ() -> None:
    built = SimpleNamespace(ABI_VERSION=3, put=len, CQ_UNIT_SIZE=20, FIELDS=("a", "b"))
    assert (
        native_loader.stale(built, 3, ["put"], {"CQ_UNIT_SIZE": 20, "FIELDS": ("a", "b")}) is None
    )
    assert native_loader.stale(built, 4, ["put"], {}) == "ABI_VERSION 3, expected 4"
    assert native_loader.stale(built, 3, ["put", "get"], {}) == "no get"
    assert native_loader.stale(built, 3, [], {"CQ_UNIT_SIZE": 24}) == (
        "CQ_UNIT_SIZE is 20 there, 24 here"
    )
    assert native_loader.stale(built, 3, [], {"FIELDS": ("a", "c")}) == (
        "FIELDS is ('a', 'b') there, ('a', 'c') here"
    )


def test_the_real_modules_match_every_python_definition() -> None:
    """What the loaders check, checked here too: a layout constant or a field order changed
    on one side only fails this test, not just the import-time check that falls back."""
    for name, (module, side) in MODULES.items():
        if module is not None:
            problem = native_loader.stale(
                module, side.ABI_VERSION, side.NAMES, getattr(side, "CONSTANTS", {})
            )
            assert problem is None, f"{name}: {problem}"


def test_a_missing_stale_or_switched_off_module_falls_back_with_one_line(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    caplog.set_level(logging.DEBUG, logger="remoting.native_loader")
    monkeypatch.delenv(native_loader.PURE_ALL, raising=False)
    load = native_loader.load
    assert load("remoting._no_such_module", abi_version=1, switch="X_OFF") is None
    assert load("remoting._codec", abi_version=codec_native.ABI_VERSION + 1, switch="X_OFF") is None
    monkeypatch.setenv("X_OFF", "1")
    assert load("remoting._codec", abi_version=codec_native.ABI_VERSION, switch="X_OFF") is None
    records = [(r.levelname, r.getMessage()) for r in caplog.records]
    assert [level for level, _ in records] == ["WARNING", "WARNING", "DEBUG"]
    assert "remoting._no_such_module is not built" in records[0][1]
    assert "remoting._codec is out of date (ABI_VERSION" in records[1][1]
    assert "remoting._codec switched off" in records[2][1]


@pytest.mark.parametrize(
    ("switch", "expected"),
    [
        ("ROCKETMQ_TRIO_PURE", "None None None"),
        ("ROCKETMQ_TRIO_PURE_CODEC", "None store sender"),
        ("ROCKETMQ_TRIO_PURE_STORE", "codec None sender"),
        ("ROCKETMQ_TRIO_NO_SENDER", "codec store None"),
    ],
)
def test_each_switch_turns_off_its_own_module_only(switch: str, expected: str) -> None:
    if any(module is None for module, _ in MODULES.values()):
        pytest.skip("a module is not loaded here")
    program = (
        "from remoting.codec_native import native as c\n"
        "from broker.store.store_native import native as s\n"
        "from remoting.sender import native_sender\n"
        "print(c and 'codec', s and 'store', native_sender() and 'sender')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", program],
        env={**_environment_without_switches(), switch: "1"},
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    assert done.stdout.split() == expected.split()
    assert "WARNING" not in done.stderr  # switched off on purpose is no warning


def _environment_without_switches() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("ROCKETMQ_TRIO_")}

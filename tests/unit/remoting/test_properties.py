"""broker.conf and namesrv.conf are Java .properties files: read as java.util.Properties.load
reads them."""

from __future__ import annotations

import pytest

from remoting.properties import PropertiesError, dumps, load, loads


def test_the_three_separators_comments_and_blank_lines() -> None:
    text = "# comment\n! also a comment\n\nbrokerName=broker-a\nbrokerId: 0\nlistenPort 10911\n"
    assert loads(text) == {"brokerName": "broker-a", "brokerId": "0", "listenPort": "10911"}


def test_spaces_around_separators_and_later_keys_win() -> None:
    assert loads("  a  =  1\na = 2\n") == {"a": "2"}
    assert loads("key=\n") == {"key": ""}
    assert loads("lonely\n") == {"lonely": ""}


def test_continuation_lines_and_escapes() -> None:
    text = "namesrvAddr=10.0.0.1:9876;\\\n    10.0.0.2:9876\npath=C\\:\\\\store\\tx\\u0041\n"
    assert loads(text) == {
        "namesrvAddr": "10.0.0.1:9876;10.0.0.2:9876",
        "path": "C:\\store\tx" + "A",
    }
    assert loads("odd=ends with two \\\\\\\\\nnext=1\n") == {
        "odd": "ends with two \\\\",
        "next": "1",
    }


def test_keys_may_hold_escaped_separators() -> None:
    assert loads("a\\=b=c\n") == {"a=b": "c"}


def test_a_malformed_unicode_escape_names_its_line() -> None:
    with pytest.raises(PropertiesError, match="line 2"):
        loads("ok=1\nbad=\\u12G4\n")


def test_files_round_trip_and_latin1_is_accepted(tmp_path) -> None:
    path = tmp_path / "broker.conf"
    path.write_text(dumps({"brokerName": "b", "storePathRootDir": "/data/store"}))
    assert load(path) == {"brokerName": "b", "storePathRootDir": "/data/store"}
    path.write_bytes("brokerName=caf\xe9\n".encode("latin-1"))
    assert load(path) == {"brokerName": "caf\xe9"}


def test_changes_keep_every_other_line_and_continuation() -> None:
    from remoting.properties import with_changes

    text = (
        "# a comment\n"
        "namesrvAddr=10.0.0.1:9876;\\\n"
        "   brokerName=not-a-key-but-a-continuation\n"
        "brokerName = old \\\n"
        "   continued\n"
        "deleteWhen: 04\n"
    )
    changed = with_changes(text, {"brokerName": "new", "fileReservedTime": "24"})
    assert changed.splitlines() == [
        "# a comment",
        "namesrvAddr=10.0.0.1:9876;\\",
        "   brokerName=not-a-key-but-a-continuation",
        "brokerName=new",
        "deleteWhen: 04",
        "fileReservedTime=24",
    ]
    assert loads(changed)["namesrvAddr"] == "10.0.0.1:9876;brokerName=not-a-key-but-a-continuation"

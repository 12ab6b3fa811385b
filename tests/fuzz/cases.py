"""One hostile request at a time, reproducible from its id (pure).

A case is drawn from ``random.Random(f"{seed}/{worker}/{n}")``, so ``Plan.case(case_id)``
rebuilds the exact bytes of any case a campaign sent, from its id alone. The kinds:

* ``field``: a code the server serves with its typed header, one or two fields set to a
  hostile value (values.py), as JSON strings, as JSON numbers (C++ style) or in a ROCKETMQ
  header; out-of-range values must be refused;
* ``sweep``: the same, systematically: every (code, field, value) in turn;
* ``header-json`` / ``header-rocketmq``: a seed frame whose header is damaged as a structure;
* ``bytes``: a seed frame with bits flipped, bytes replaced, cut, spliced or lying lengths;
* ``body``: a seed frame with a hostile body (batch, JSON, compressed registration, sizes);
* ``settings``: UPDATE_BROKER_CONFIG / UPDATE_NAMESRV_CONFIG with a value no key takes.

Each case says how it must be sent (``Shape``): on a shared connection when the server will
decode it (our decoder says so: it is the server's), alone on a connection the server will
close when the server will refuse the frame, alone on a connection we close when it is not one
whole frame.
"""

from __future__ import annotations

import enum
import json
import random
import re
import typing
from pathlib import Path

import attrs

from broker.config import BrokerConfig
from broker.store.config import MessageStoreConfig
from namesrv.config import NamesrvConfig
from remoting.codes import RequestCode
from remoting.command import decode_command
from remoting.errors import RemoteProtocolError
from remoting.frame import FrameDecoder
from remoting.settings import keyed_fields
from tests.fuzz import bodies, mutate, wire
from tests.fuzz.seeds import Seed
from tests.fuzz.values import HeaderClass, as_json_number

C = RequestCode
SENDS = frozenset({C.SEND_MESSAGE, C.SEND_MESSAGE_V2, C.SEND_REPLY_MESSAGE_V2})
SEND_LIKE = SENDS | {C.SEND_BATCH_MESSAGE, C.SEND_REPLY_MESSAGE}
PROPERTIES_FIELDS = ("i", "properties")
# What no key takes, whatever its type (the settings cases only pick int, bool, float and enum
# keys): must be refused with the key named.
BAD_SETTINGS = ["99999999999999999999", "-99999999999999999999", "1x", "NaN", "\u0663", "0x10"]
KINDS = {
    "field": 34, "header-json": 12, "header-rocketmq": 8, "bytes": 26, "body": 14,
    "settings": 2, "oneway": 4,
}  # fmt: skip


class Shape(enum.Enum):
    PIPELINED = "pipelined"  # decodes: sent on a shared connection
    CLOSING = "closing"  # one whole frame the server refuses: it closes the connection
    PARTIAL = "partial"  # not one whole frame: we close the connection


@attrs.frozen
class Case:
    case_id: str
    kind: str
    data: bytes
    namesrv: bool
    shape: Shape
    opaque: int | None = None  # ours, unique: its answer is checked
    must_refuse: str | None = None  # the field or key whose value must be refused
    stored_body: bytes | None = None  # a send: once acknowledged, it must survive


def shape_of(data: bytes) -> Shape:
    decoder = FrameDecoder()
    decoder.receive_data(data)
    try:
        frame = decoder.next_frame()
    except RemoteProtocolError:
        return Shape.CLOSING
    if frame is None or decoder.buffered_bytes:
        return Shape.PARTIAL
    try:
        decode_command(frame)
    except RemoteProtocolError:
        return Shape.CLOSING
    return Shape.PIPELINED


def settings_keys(*classes: type) -> list[str]:
    """Keys whose values parse as numbers, booleans or enum names."""
    out = []
    for cls in classes:
        hints = typing.get_type_hints(cls)
        for key, attribute in keyed_fields(cls).items():
            kind = hints.get(attribute.name)
            if kind in (int, bool, float) or (
                isinstance(kind, type) and issubclass(kind, enum.Enum)
            ):
                out.append(key)
    return sorted(out)


@attrs.define
class Plan:
    """What a campaign draws its cases from."""

    seed: int
    world: Path
    seeds: list[Seed]
    tables: dict[bool, dict[int, HeaderClass]]  # namesrv? -> code -> header fields
    values: list[str]
    bodies: dict[int, bytes]
    broker_keys: list[str] = attrs.Factory(lambda: settings_keys(BrokerConfig, MessageStoreConfig))
    namesrv_keys: list[str] = attrs.Factory(lambda: settings_keys(NamesrvConfig))
    _sweeps: dict[bool, list[tuple[int, str, str]]] = attrs.field(factory=dict, eq=False)

    def rng(self, case_id: str) -> random.Random:
        return random.Random(f"{self.seed}/{case_id}")

    def case(self, case_id: str) -> Case:
        """The case with this id: ``w<worker>/<n>/<b|n>`` (random) or ``sweep/<b|n>/<i>``."""
        parts = case_id.split("/")
        namesrv = parts[-1] == "n" if parts[0] != "sweep" else parts[1] == "n"
        if parts[0] == "sweep":
            return self.sweep_case(namesrv, int(parts[2]))
        return self.random_case(case_id, namesrv)

    # ----------------------------------------------------------------- systematic

    def sweep_entries(self, namesrv: bool) -> list[tuple[int, str, str]]:
        entries = self._sweeps.get(namesrv)
        if entries is None:
            entries = self._sweeps[namesrv] = [
                (code, spec.wire, value)
                for code, header in sorted(self.tables[namesrv].items())
                for spec in header.specs
                for value in self.values
            ]
        return entries

    def sweep_case(self, namesrv: bool, index: int) -> Case:
        entries = self.sweep_entries(namesrv)
        code, field, value = entries[index % len(entries)]
        style = ("json", "number", "rocketmq")[(index // len(entries)) % 3]
        case_id = f"sweep/{'n' if namesrv else 'b'}/{index}"
        return self._field_case(case_id, namesrv, code, {field: value}, style, self.rng(case_id))

    # ----------------------------------------------------------------- random

    def random_case(self, case_id: str, namesrv: bool) -> Case:
        rng = self.rng(case_id)
        kind = rng.choices(list(KINDS), weights=list(KINDS.values()))[0]
        if kind in ("field", "oneway"):
            table = self.tables[namesrv]
            code = rng.choice(sorted(table))
            header = table[code]
            changes = {
                rng.choice(header.specs).wire: rng.choice(self.values)
                for _ in range(rng.choice([1, 1, 1, 2, 3]))
            }
            style = rng.choice(["json", "json", "number", "rocketmq", "rocketmq"])
            return self._field_case(case_id, namesrv, code, changes, style, rng, kind == "oneway")
        if kind == "settings":
            return self._settings_case(case_id, namesrv, rng)
        seed = self._pick_seed(rng, namesrv)
        if kind == "header-json":
            name, data = self._json_damage(rng, seed)
        elif kind == "header-rocketmq":
            name, data = self._rocketmq_damage(rng, seed)
        elif kind == "body":
            name, data = self._body_damage(rng, seed)
        else:
            name, data = mutate.frame_bytes_mutation(
                rng, seed.frame, self._pick_seed(rng, namesrv).frame
            )
        return Case(case_id, f"{kind}:{name}<{seed.name}>", data, namesrv, shape_of(data))

    def _pick_seed(self, rng: random.Random, namesrv: bool) -> Seed:
        own = [s for s in self.seeds if s.namesrv == namesrv]
        return rng.choice(own if own and rng.random() < 0.8 else self.seeds)

    def _field_case(
        self,
        case_id: str,
        namesrv: bool,
        code: int,
        changes: dict[str, str],
        style: str,
        rng: random.Random,
        oneway: bool = False,
    ) -> Case:
        header = self.tables[namesrv][code]
        ext = {**header.plain, **changes}
        body = self.bodies.get(code, b"")
        if code == C.SEND_BATCH_MESSAGE and rng.random() < 0.5:
            body = bodies.batch_body(rng, self.world)
        elif code in SEND_LIKE and not (set(changes) & set(PROPERTIES_FIELDS)):
            field = "i" if "i" in ext else "properties"
            if rng.random() < 0.3:
                ext[field] = bodies.hostile_properties(rng, self.world)
        if code in SENDS:
            body = f"fuzz:{case_id}".encode()
        opaque = _opaque(case_id)
        flag = 2 if oneway else 0
        if style == "rocketmq":
            head = wire.rocketmq_header(code, ext, opaque, flag=flag)
            data = wire.framed(wire.ROCKETMQ_TYPE, head, body)
        else:
            shown = {k: as_json_number(v) for k, v in ext.items()} if style == "number" else ext
            fields = wire.request_fields(code, shown, opaque, flag=flag)
            data = wire.framed(wire.JSON_TYPE, wire.json_header(fields), body)
        refused = [f for f, v in changes.items() if header.cls is not object]
        rocketmq = style == "rocketmq"
        refused = [f for f in refused if header.out_of_range(f, changes[f], rocketmq=rocketmq)]
        kind = f"{'oneway' if oneway else 'field'}:{style}:{code}:{','.join(changes)}"
        shape = shape_of(data)
        answered = not oneway and shape is Shape.PIPELINED
        return Case(
            case_id,
            kind,
            data,
            namesrv,
            shape,
            opaque=opaque if answered else None,
            must_refuse=refused[0] if refused and answered else None,
            stored_body=body if code in SENDS and answered and not refused else None,
        )

    def _settings_case(self, case_id: str, namesrv: bool, rng: random.Random) -> Case:
        key = rng.choice(self.namesrv_keys if namesrv else self.broker_keys)
        code = C.UPDATE_NAMESRV_CONFIG if namesrv else C.UPDATE_BROKER_CONFIG
        body = f"{key}={rng.choice(BAD_SETTINGS)}\n".encode()
        opaque = _opaque(case_id)
        data = wire.framed(
            wire.JSON_TYPE, wire.json_header(wire.request_fields(code, None, opaque)), body
        )
        return Case(case_id, f"settings:{key}", data, namesrv, Shape.PIPELINED, opaque, key)

    def _json_damage(self, rng: random.Random, seed: Seed) -> tuple[str, bytes]:
        command = seed.command()
        if command.serialize_type != wire.JSON_TYPE:
            return self._rocketmq_damage(rng, seed)
        header_length = mutate.header_info(seed.frame)[1]  # type: ignore[index]
        header = seed.frame[8 : 8 + header_length]
        if rng.random() < 0.3:
            name, damaged = wire.raw_json_damage(rng, header)
        else:
            fields = json.loads(header)
            codes = [*sorted(self.tables[seed.namesrv]), 0, -1, 2**15, 2**31]
            name = wire.mutate_json_fields(rng, fields, codes)
            damaged = wire.json_header(fields, ascii_only=rng.random() < 0.7)
        return name, wire.framed(wire.JSON_TYPE, damaged, bytes(command.body))

    def _rocketmq_damage(self, rng: random.Random, seed: Seed) -> tuple[str, bytes]:
        command = seed.command()
        head = wire.rocketmq_header(
            command.code, dict(command.ext_fields or {}), command.opaque, flag=command.flag
        )
        name, damaged = wire.rocketmq_damage(rng, head)
        return name, wire.framed(wire.ROCKETMQ_TYPE, damaged, bytes(command.body))

    def _body_damage(self, rng: random.Random, seed: Seed) -> tuple[str, bytes]:
        command = seed.command()
        ext = dict(command.ext_fields or {})
        if command.code == C.SEND_BATCH_MESSAGE:
            name, body = "batch", bodies.batch_body(rng, self.world)
        elif command.code == C.REGISTER_BROKER and rng.random() < 0.5:
            ext["compressed"] = "true"
            name, body = "compressed", bodies.compressed_register_body(rng)
        elif command.body[:1] in (b"{", b"["):
            name, body = "json", bodies.damaged_json_body(rng, bytes(command.body))
        else:
            # bodies at and past maxMessageSize (4 MiB) now and then: they cost the most
            big = rng.random() < 0.03
            size = rng.choice([4 * 1024 * 1024, 4 * 1024 * 1024 + 1] if big else [0, 1, 70_000])
            size = rng.randrange(size + 1) if size == 70_000 else size
            name, body = f"size-{size}", rng.randbytes(size) if size < 100_000 else bytes(size)
        head = wire.json_header(wire.request_fields(command.code, ext, command.opaque))
        return name, wire.framed(wire.JSON_TYPE, head, body)


_CASE_ID = re.compile(r"(w\d+/\d+/[bn]|sweep/[bn]/\d+)")


def _opaque(case_id: str) -> int:
    """Ours, in the top of the positive int range: the case's number, so no two cases of one
    sender (one connection) share it. Random ones did once in a 30-minute campaign, and the
    answer to one case was judged as the other's."""
    number = next(int(part) for part in case_id.split("/") if part.isdigit())
    return (1 << 30) | (number & ((1 << 30) - 1))


def valid_case_id(text: str) -> bool:
    return _CASE_ID.fullmatch(text) is not None

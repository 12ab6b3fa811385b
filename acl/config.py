"""plain_acl.yml -> typed accounts (RocketMQ 4.9's file format), every refusal naming the file,
the line and the reason.

The YAML is read with PyYAML's safe loader only (node composition, then scalars constructed one
by one), so tags cannot build objects. Values follow SnakeYAML's YAML 1.1 reading as Java sees
it: an unquoted number is a number (``secretKey: 12345678`` is the text "12345678", as
fastjson turns it back into a string), ``admin`` is a YAML boolean or the text true/false.

What Java accepts silently and we refuse, because it is a mistake that would otherwise only
show as refused requests: an unknown permission name (Java: DENY), a bad address pattern, the
same accessKey twice in one file (Java keeps the first), a duplicated mapping key. Keys Java
does not know are reported as warnings, not errors.

PyYAML is imported by the functions that read a file, not with this module: every broker,
NameServer and mqadmin imports the account types, few read an ACL file, and PyYAML was 2-3 %
of each one's start-up CPU.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs

from acl.address import parse_pattern
from acl.errors import AclConfigError
from acl.permission import PERM_NAMES, parse_perm, split_resource_perm

if TYPE_CHECKING:
    import yaml

MAX_ACL_FILE_BYTES = 4 * 1024 * 1024
MIN_KEY_LENGTH = 7  # Java: "length should longer than 6"

GLOBAL_WHITE = "globalWhiteRemoteAddresses"
ACCOUNTS = "accounts"
DATA_VERSION = "dataVersion"
_TOP_KEYS = frozenset({GLOBAL_WHITE, ACCOUNTS, DATA_VERSION})
_ACCOUNT_KEYS = frozenset(
    {
        "accessKey",
        "secretKey",
        "whiteRemoteAddress",
        "admin",
        "defaultTopicPerm",
        "defaultGroupPerm",
        "topicPerms",
        "groupPerms",
    }
)


@attrs.frozen
class AccountConfig:
    access_key: str
    secret_key: str = attrs.field(repr=False)
    white_remote_address: str | None = None
    admin: bool = False
    default_topic_perm: str | None = None  # None: DENY, as in Java
    default_group_perm: str | None = None
    topic_perms: tuple[str, ...] = ()
    group_perms: tuple[str, ...] = ()
    line: int = 0


@attrs.frozen
class FileVersion:
    counter: int = 0
    timestamp: int = 0


@attrs.frozen
class AclFile:
    global_white_remote_addresses: tuple[str, ...] = ()
    accounts: tuple[AccountConfig, ...] = ()
    data_version: FileVersion = FileVersion()
    warnings: tuple[str, ...] = ()


class _Reader:
    """Walks the composed node tree; every error carries the node's line. A node's kind is its
    ``id`` (PyYAML's "scalar", "sequence" or "mapping"), so this class needs no PyYAML import."""

    def __init__(self, loader: yaml.SafeLoader, name: str) -> None:
        self.loader = loader
        self.name = name
        self.warnings: list[str] = []

    def fail(self, node: yaml.Node, reason: str) -> AclConfigError:
        return AclConfigError(f"{self.name}:{node.start_mark.line + 1}: {reason}")

    def mapping(self, node: yaml.Node, what: str) -> dict[str, tuple[yaml.Node, yaml.Node]]:
        if node.id != "mapping":
            raise self.fail(node, f"{what} must be a mapping of key: value")
        out: dict[str, tuple[yaml.Node, yaml.Node]] = {}
        for key_node, value_node in node.value:
            key = self.scalar(key_node)
            if not isinstance(key, str):
                raise self.fail(key_node, f"{what}: key {key!r} is not text")
            if key in out:
                raise self.fail(key_node, f"{what}: {key} appears twice")
            out[key] = (key_node, value_node)
        return out

    def sequence(self, node: yaml.Node, what: str) -> list[yaml.Node]:
        if self.is_null(node):
            return []
        if node.id != "sequence":
            raise self.fail(node, f"{what} must be a list")
        return list(node.value)

    def scalar(self, node: yaml.Node) -> Any:
        if node.id != "scalar":
            raise self.fail(node, "expected a single value, found a list or mapping")
        return self.loader.construct_object(node)

    def is_null(self, node: yaml.Node) -> bool:
        return node.id == "scalar" and self.scalar(node) is None

    def text(self, node: yaml.Node, what: str, *, numbers: bool = False) -> str | None:
        value = self.scalar(node)
        if value is None or isinstance(value, str):
            return value
        if numbers and isinstance(value, int) and not isinstance(value, bool):
            return str(value)
        # the value itself may be a secret key: name its type only
        raise self.fail(node, f"{what} must be text (quote it), found a {type(value).__name__}")


def parse_acl_file(text: str, name: str) -> AclFile:
    """Parse one ACL file's text; AclConfigError says where and why it cannot be used."""
    if len(text) > MAX_ACL_FILE_BYTES:
        raise AclConfigError(f"{name}: larger than {MAX_ACL_FILE_BYTES} bytes")
    import yaml

    loader = yaml.SafeLoader(text)
    try:
        root = loader.get_single_node()
        if root is None:
            return AclFile()
        reader = _Reader(loader, name)
        return _file(reader, root)
    except yaml.YAMLError as exc:
        raise AclConfigError(yaml_problem(name, exc)) from None
    finally:
        loader.dispose()


def yaml_problem(name: str, exc: yaml.YAMLError) -> str:
    """Where and why the YAML does not parse, without the snippet of the file PyYAML's own
    message quotes (that line may hold a secret key)."""
    import yaml

    if isinstance(exc, yaml.MarkedYAMLError):
        mark = exc.problem_mark or exc.context_mark
        line = f":{mark.line + 1}" if mark is not None else ""
        return f"{name}{line}: not valid YAML: {exc.problem or exc.context or 'cannot parse'}"
    return f"{name}: not valid YAML: {type(exc).__name__}"


def _file(reader: _Reader, root: yaml.Node) -> AclFile:
    if reader.is_null(root):
        return AclFile()
    top = reader.mapping(root, "the file")
    for key, (key_node, _) in top.items():
        if key not in _TOP_KEYS:
            reader.warnings.append(f"{reader.name}:{key_node.start_mark.line + 1}: {key} ignored")
    white: list[str] = []
    if GLOBAL_WHITE in top:
        for node in reader.sequence(top[GLOBAL_WHITE][1], GLOBAL_WHITE):
            white.append(_pattern(reader, node, GLOBAL_WHITE))
    accounts: list[AccountConfig] = []
    seen: set[str] = set()
    if ACCOUNTS in top:
        for node in reader.sequence(top[ACCOUNTS][1], ACCOUNTS):
            account = _account(reader, node)
            if account.access_key in seen:
                raise reader.fail(node, f"accessKey {account.access_key} appears twice")
            seen.add(account.access_key)
            accounts.append(account)
    version = FileVersion()
    if DATA_VERSION in top:
        version = _version(reader, top[DATA_VERSION][1])
    return AclFile(tuple(white), tuple(accounts), version, tuple(reader.warnings))


def _pattern(reader: _Reader, node: yaml.Node, what: str) -> str:
    value = reader.text(node, what)
    try:
        parse_pattern(value)
    except ValueError as exc:
        raise reader.fail(node, f"{what}: {exc}") from None
    return value or ""


def _account(reader: _Reader, node: yaml.Node) -> AccountConfig:
    fields = reader.mapping(node, "an account")
    for key, (key_node, _) in fields.items():
        if key not in _ACCOUNT_KEYS:
            reader.warnings.append(f"{reader.name}:{key_node.start_mark.line + 1}: {key} ignored")

    def text(key: str, numbers: bool = False) -> str | None:
        return reader.text(fields[key][1], key, numbers=numbers) if key in fields else None

    keys = {k: text(k, numbers=True) for k in ("accessKey", "secretKey")}
    for key, value in keys.items():
        if value is None or len(value) < MIN_KEY_LENGTH:
            where = fields[key][1] if key in fields else node
            raise reader.fail(where, f"{key} must be at least {MIN_KEY_LENGTH} characters")
    white = (
        _pattern(reader, fields["whiteRemoteAddress"][1], "whiteRemoteAddress")
        if ("whiteRemoteAddress" in fields)
        else None
    )
    perms = {}
    for key in ("defaultTopicPerm", "defaultGroupPerm"):
        value = text(key)
        if value is not None and parse_perm(value) is None:
            raise reader.fail(
                fields[key][1], f"{key}: {value!r} is not one of {', '.join(PERM_NAMES)}"
            )
        perms[key] = value
    return AccountConfig(
        access_key=keys["accessKey"] or "",
        secret_key=keys["secretKey"] or "",
        white_remote_address=white or None,
        admin=_admin(reader, fields),
        default_topic_perm=perms["defaultTopicPerm"],
        default_group_perm=perms["defaultGroupPerm"],
        topic_perms=_resource_perms(reader, fields, "topicPerms"),
        group_perms=_resource_perms(reader, fields, "groupPerms"),
        line=node.start_mark.line + 1,
    )


def _admin(reader: _Reader, fields: dict[str, tuple[yaml.Node, yaml.Node]]) -> bool:
    if "admin" not in fields:
        return False
    node = fields["admin"][1]
    value = reader.scalar(node)
    if value is None or isinstance(value, bool):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise reader.fail(node, f"admin must be true or false, found {value!r}")


def _resource_perms(
    reader: _Reader, fields: dict[str, tuple[yaml.Node, yaml.Node]], key: str
) -> tuple[str, ...]:
    if key not in fields:
        return ()
    out = []
    for node in reader.sequence(fields[key][1], key):
        item = reader.text(node, key) or ""
        pair = split_resource_perm(item)
        if pair is None:
            raise reader.fail(node, f"{key}: {item!r} is not name=PERM")
        if parse_perm(pair[1]) is None:
            raise reader.fail(node, f"{key}: {pair[1]!r} is not one of {', '.join(PERM_NAMES)}")
        out.append(item)
    return tuple(out)


def _version(reader: _Reader, node: yaml.Node) -> FileVersion:
    items = reader.sequence(node, DATA_VERSION)
    if not items:
        return FileVersion()
    fields = reader.mapping(items[0], DATA_VERSION)
    values = {}
    for key in ("counter", "timestamp"):
        value = reader.scalar(fields[key][1]) if key in fields else 0
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise reader.fail(fields[key][1], f"{DATA_VERSION}.{key} must be a number >= 0")
        values[key] = value
    return FileVersion(values["counter"], values["timestamp"])


def parse_tools_file(text: str, name: str) -> tuple[str, str] | None:
    """conf/tools.yml (``accessKey``, ``secretKey``), what Java's mqadmin signs with; None when
    either is missing or blank, as in Java."""
    import yaml

    loader = yaml.SafeLoader(text)
    try:
        root = loader.get_single_node()
        if root is None:
            return None
        reader = _Reader(loader, name)
        fields = reader.mapping(root, "the file")
        values = [
            reader.text(fields[k][1], k, numbers=True) if k in fields else None
            for k in ("accessKey", "secretKey")
        ]
    except yaml.YAMLError as exc:
        raise AclConfigError(yaml_problem(name, exc)) from None
    finally:
        loader.dispose()
    access_key, secret_key = (v.strip() if v else "" for v in values)
    return (access_key, secret_key) if access_key and secret_key else None

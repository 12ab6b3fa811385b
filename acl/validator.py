"""One request against the rules in force: Java's PlainAccessValidator.parse + validate.

Order as in Java: a globally white-listed address passes everything; then the request must
name a known AccessKey; an address on that account's white list passes without a signature or
permission check; then the signature; then admin and resource permissions. Resources are only
worked out once the signature holds (Java works them out first; the answer is the same except
for which refusal a malformed heartbeat from a white-listed host gets).
"""

from __future__ import annotations

from acl.address import Address
from acl.errors import FRAME_NO_ACCESS_KEY, FRAME_SIGNATURE, FRAME_UNKNOWN_ACCESS_KEY, Refusal
from acl.rules import AclRules, check_perm
from acl.signature import (
    ACCESS_KEY,
    SERVER_SKIPS,
    SIGNATURE,
    UNIQUE_KEY_QUERY,
    Signer,
    content_prefix,
    signature_matches,
)
from acl.table import Access, BodyError, MessageLookup, rule_for
from remoting.command import RemotingCommand

_SKIP_ONLY_SIGNATURE = frozenset({SIGNATURE})


def validate(
    rules: AclRules,
    request: RemotingCommand,
    addr: Address | None,
    lookup: MessageLookup | None = None,
) -> Refusal | None:
    """None when the request may go on to its processor, else why not."""
    rule = rule_for(request.code)
    if rule.access is Access.PUBLIC:
        return None
    ext_fields = request.ext_fields
    for white in rules.global_white:
        if white.matches(addr):
            return None
    access_key = ext_fields.get(ACCESS_KEY) if ext_fields is not None else None
    if access_key is None:
        return Refusal("No accessKey is configured", FRAME_NO_ACCESS_KEY)
    account = rules.accounts.get(access_key)
    if account is None:
        return Refusal(f"No acl config for {access_key}", FRAME_UNKNOWN_ACCESS_KEY)
    if account.white.matches(addr):
        return None
    assert ext_fields is not None
    if not _signed(account.signer, ext_fields, request.body):
        return Refusal(f"Check signature failed for accessKey={access_key}", FRAME_SIGNATURE)
    resources: list[tuple[str, int]] = []
    if rule.resources is not None:
        try:
            resources = rule.resources(request, lookup)
        except BodyError as exc:
            return exc.refusal()
    return check_perm(account, request.code, rule.access is Access.ADMIN, resources)


def _signed(
    signer: Signer, ext_fields: dict[str, str], body: bytes | bytearray | memoryview
) -> bool:
    given = ext_fields.get(SIGNATURE)
    if signature_matches(signer.sign(content_prefix(ext_fields, SERVER_SKIPS), body), given):
        return True
    # Java's own admin client signs _UNIQUE_KEY_QUERY too (it adds the flag before its RPC
    # hook runs) while Java's broker leaves it out: accept either reading.
    return UNIQUE_KEY_QUERY in ext_fields and signature_matches(
        signer.sign(content_prefix(ext_fields, _SKIP_ONLY_SIGNATURE), body), given
    )

"""RocketMQ 4.9's ACL 1.0 (the plain access validator), shared by the broker and NameServer.

Pure parts: ``permission`` (PUB/SUB/DENY bits), ``address`` (remote address patterns),
``signature`` (HMAC-SHA1 over extFields values and body), ``config`` (plain_acl.yml -> typed
accounts, errors with line numbers), ``rules`` (PlainPermissionManager.validate/checkPerm),
``table`` (request code -> what it needs) and ``validator`` (a request -> a refusal or None).
I/O lives in ``files`` (reading, hashing and rewriting the ACL files) and ``service`` (the
current rules, the 500 ms file watch, the admin updates). ``hook`` is the one check at the
request-dispatch boundary that RemotingServer calls before any processor.

Imports run one way: this package imports ``remoting`` only.
"""

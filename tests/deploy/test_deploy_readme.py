"""deploy/README.md's "A master/slave pair on two Debian hosts", followed as written on one host,
ending in a working pair: a message sent on the master is read back from the slave.

The README's ``deploy-test`` blocks run in order with bash, as root, in the checkout, with what
names the host moved aside: every path the procedure uses (``/etc/rocketmq-trio``,
``/var/lib/rocketmq-trio``, ``/var/log/rocketmq-trio``, ``/opt/rocketmq-trio*``,
``/etc/systemd/system``) under a scratch root, the user ``rocketmq`` renamed to a fresh one
(created by the README's own ``useradd``, removed after), the addresses 127.0.0.1 and the
ports free ones. What cannot run here is replaced by its nearest equivalent:

- ``apt-get install``: skipped (the test needs Debian's ``python3`` with venv, and says so);
- ``pip install .``: tests/deploy/offline_install.py (no network, no compiler);
- ``systemctl daemon-reload``: ``systemd-analyze verify`` of the units as copied (when
  installed);
- ``systemctl enable --now UNIT``: systemd is not running here, so the unit's ``ExecStart``
  runs as its ``User``/``Group`` with its ``Environment`` and ``UMask``, an otherwise empty
  environment, ``HOME`` from passwd (``/nonexistent``) and ``/`` as working directory, as
  systemd would run it. Its limits and sandbox (``ProtectSystem=strict``, ...) are left to
  ``systemd-analyze``; the service user's own rights (``/etc/rocketmq-trio`` is root's) stand in
  for the read-only ``/etc``.
"""

from __future__ import annotations

import hashlib
import os
import pwd
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import attrs
import psutil
import pytest

from remoting import properties
from remoting.client import RemotingClient
from tests.deploy.clusterkit import REPO
from tests.harness import ProcessPool, ServerProcess, free_port_block
from tests.integration.brokerkit import pull_all
from tests.integration.hakit import wait_converged, wait_until

README = REPO / "deploy" / "README.md"
FRESH_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
MOVED = re.compile(
    r"/etc/rocketmq-trio|/var/lib/rocketmq-trio|/var/log/rocketmq-trio|/opt/rocketmq-trio"
    r"|/etc/systemd/system"
)
USER = re.compile(r"(?<![\w/.-])rocketmq(?![\w-])")
BLOCK = re.compile(r"^```(\S+)[ \t]*([^\n]*)\n(.*?)^```$", re.M | re.S)

pytestmark = [
    pytest.mark.skipif(
        os.geteuid() != 0, reason="creates a system user and runs the servers as it: needs root"
    ),
    pytest.mark.skipif(
        subprocess.run(["/usr/bin/python3", "-c", "import venv, ensurepip"], check=False).returncode
        if Path("/usr/bin/python3").exists()
        else True,
        reason="the procedure installs with the host's python3 -m venv (Debian: python3-venv)",
    ),
]


@attrs.define
class Host:
    """The scratch root standing for a fresh host, and what the procedure made there."""

    root: Path
    user: str
    ports: dict[str, int]
    pool: ProcessPool
    servers: dict[str, ServerProcess] = attrs.Factory(dict)
    notes: list[str] = attrs.Factory(list)

    def localize(self, text: str) -> str:
        text = MOVED.sub(lambda m: f"{self.root}{m.group(0)}", text)
        text = USER.sub(self.user, text)
        for port, free in self.ports.items():
            text = re.sub(rf"\b{port}\b", str(free), text)
        return text

    def path(self, absolute: str) -> Path:
        return self.root / absolute.lstrip("/")


def readme_blocks() -> list[tuple[str, str]]:
    """(tag, text) of the README's blocks marked for this test, in order."""
    return [
        (tag, text)
        for lang, tag, text in BLOCK.findall(README.read_text())
        if lang == "sh" and tag.startswith("deploy-test")
    ]


def commands(block: str) -> list[str]:
    """A block's commands: a here-document or a continued line stays with its command."""
    out, lines = [], iter(block.splitlines())
    for line in lines:
        command = [line]
        heredoc = re.search(r"<<-?'?(\w+)'?", line)
        if heredoc:
            for more in lines:
                command.append(more)
                if more.strip() == heredoc.group(1):
                    break
        while command[-1].endswith("\\"):
            command.append(next(lines))
        if line.strip() and not line.lstrip().startswith("#"):
            out.append("\n".join(command))
    return out


def local_vars(host: Host, block: str) -> str:
    block = re.sub(r"^NAMESRV_ADDR=.*$", "NAMESRV_ADDR='127.0.0.1:9876'", block, flags=re.M)
    block = re.sub(r"^(MASTER_IP|SLAVE_IP)=\S+", r"\1=127.0.0.1", block, flags=re.M)
    return host.localize(block)


BASH_PRELUDE = """set -euo pipefail
__offline_install() { "$TEST_PYTHON" -m tests.deploy.offline_install "$1"; }
"""


def bash(host: Host, variables: str, script: str) -> str:
    done = subprocess.run(
        ["bash", "-c", BASH_PRELUDE + variables + "\n" + script],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        cwd=REPO,
        env={"PATH": FRESH_PATH, "HOME": "/root", "LANG": "C.UTF-8", "TEST_PYTHON": sys.executable},
    )
    assert done.returncode == 0, f"{script}\n--- stdout\n{done.stdout}\n--- stderr\n{done.stderr}"
    return done.stdout


def unit_settings(path: Path) -> dict[str, list[str]]:
    settings: dict[str, list[str]] = {}
    for line in path.read_text().splitlines():
        if "=" in line and not line.startswith(("#", ";", "[")):
            key, value = line.split("=", 1)
            settings.setdefault(key.strip(), []).append(value.strip())
    return settings


def verify_units(host: Host) -> None:
    """``systemctl daemon-reload``: the units as copied, with this root's paths and user."""
    units = host.path("/etc/systemd/system")
    for unit in units.glob("*.service"):
        unit.write_text(host.localize(unit.read_text()))
    if shutil.which("systemd-analyze") is None:
        host.notes.append("systemd-analyze is not installed: the units were not verified")
        return
    instance = units / "mqbroker@broker-a-m.service"
    shutil.copy(units / "mqbroker@.service", instance)
    done = subprocess.run(
        ["systemd-analyze", "verify", str(units / "mqnamesrv.service"), str(instance)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    instance.unlink()
    assert done.returncode == 0 and not done.stderr.strip(), done.stderr


def start_unit(host: Host, name: str) -> None:
    """``systemctl enable --now NAME``: the unit's ExecStart as systemd would run it."""
    template, _, instance = name.partition("@")
    unit = f"{template}@.service" if instance else f"{name}.service"
    settings = unit_settings(host.path("/etc/systemd/system") / unit)
    (user,), (group,) = settings["User"], settings["Group"]
    environment = [f"HOME={pwd.getpwnam(user).pw_dir}", f"USER={user}", f"LOGNAME={user}"]
    environment += [f"PATH={FRESH_PATH}", *settings.get("Environment", [])]
    (exec_start,) = settings["ExecStart"]
    (umask,) = settings.get("UMask", ["0022"])
    argv = [
        *("setpriv", f"--reuid={user}", f"--regid={group}", "--init-groups", "--"),
        *("env", "-i", *environment),
        *("sh", "-c", f'umask {umask} && exec "$@"', "sh"),
        *shlex.split(exec_start.replace("%i", instance)),
    ]
    host.servers[name] = host.pool.start(name, argv, cwd=Path("/"))


def run_block(host: Host, variables: str, block: str) -> str:
    """One block: bash for most commands, the stand-ins for what needs the real host."""
    out, pending = [], []
    for command in commands(host.localize(block)):
        first = command.split("#", 1)[0].strip()
        systemctl = re.fullmatch(r"systemctl (daemon-reload|enable --now (\S+))", first)
        if first.startswith("apt-get "):
            host.notes.append(f"skipped: {first}")
            continue
        if systemctl is None:
            pending.append(re.sub(r"^(\S+)/bin/pip install .*$", r"__offline_install \1", command))
            continue
        if pending:
            out.append(bash(host, variables, "\n".join(pending)))
            pending = []
        if systemctl.group(2):
            start_unit(host, systemctl.group(2))
        else:
            verify_units(host)
    if pending:
        out.append(bash(host, variables, "\n".join(pending)))
    return "".join(out)


def snapshot(directory: Path) -> dict[str, str]:
    return {
        str(p.relative_to(directory)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(directory.rglob("*"))
        if p.is_file()
    }


@pytest.fixture
def host(tmp_path) -> Iterator[Host]:
    # Not under tmp_path: pytest makes that 0700, and the service user must reach the venv.
    root = Path(tempfile.mkdtemp(prefix="rocketmq-deploy-"))
    root.chmod(0o755)
    for directory in ("etc/systemd/system", "var/lib", "var/log", "opt"):
        (root / directory).mkdir(parents=True)
    user = f"rmqt{uuid.uuid4().hex[:8]}"
    ports = {9876: free_port_block(1), 10911: free_port_block(4) + 2, 10921: free_port_block(4) + 2}
    pool = ProcessPool(root / "journal")  # each unit's stdout and stderr
    try:
        yield Host(root, user, ports, pool)
    finally:
        pool.stop_all()
        subprocess.run(["userdel", user], capture_output=True, check=False)
        subprocess.run(["groupdel", user], capture_output=True, check=False)
        for kept in ("journal", "var/log/rocketmq-trio"):  # for a failure's report
            if (root / kept).exists():
                shutil.copytree(root / kept, tmp_path / kept.replace("/", "-"))
        shutil.rmtree(root, ignore_errors=True)


async def test_the_readme_procedure_gives_a_working_pair(host: Host) -> None:
    blocks = readme_blocks()
    variables = next(local_vars(host, text) for tag, text in blocks if tag == "deploy-test:vars")
    checks = [text for tag, text in blocks if tag == "deploy-test:check"]
    etc, etc_before = host.path("/etc/rocketmq-trio"), {}
    for tag, text in blocks:
        if tag == "deploy-test":
            if "systemctl enable" in text:
                etc_before = snapshot(etc)  # as the operator left it
            run_block(host, variables, text)
    assert set(host.servers) == {"mqnamesrv", "mqbroker@broker-a-m", "mqbroker@broker-a-s"}
    master = f"127.0.0.1:{host.ports[10911]}"
    slave = f"127.0.0.1:{host.ports[10921]}"
    async with RemotingClient.open() as client:
        await wait_converged(client, master, slave)  # "once haStatus shows the slave in sync"
        shown = run_block(host, variables, checks[0])
        assert "broker-a" in shown and "SLAVE" in shown and "SEND_OK" in shown, shown

        async def on_the_slave() -> bool:
            bodies = [
                m.body for q in range(8) for m in await pull_all(client, slave, "DeployCheck", q)
            ]
            return b"hello from host A" in bodies

        await wait_until(on_the_slave, 60, "the message sent on the master to be on the slave")
    changed = run_block(host, variables, checks[1])
    assert "applied: fileReservedTime" in changed, changed

    service = pwd.getpwnam(host.user)
    for name, server in host.servers.items():
        assert psutil.Process(server.pid).uids().real == service.pw_uid, name
    for name in ("mqbroker@broker-a-s", "mqbroker@broker-a-m", "mqnamesrv"):
        assert host.servers[name].terminate() == 0, host.servers[name].log_tail()
    runtime = host.path("/var/lib/rocketmq-trio/broker-a-m/config/broker.properties")
    assert properties.load(runtime) == {"fileReservedTime": "48"}
    assert (runtime.stat().st_uid, runtime.stat().st_mode & 0o777) == (service.pw_uid, 0o600)
    assert etc_before and snapshot(etc) == etc_before  # /etc is never written
    for log in ("namesrv", "broker-a-m", "broker-a-s"):
        path = host.path(f"/var/log/rocketmq-trio/{log}.log")
        assert path.stat().st_uid == service.pw_uid and "serving on" in path.read_text()

#!/usr/bin/env python3
"""What one Cluster master spends per renewal, by the renewal's shape, with
no leasehold in the way: the floor under bench/scale --topology cluster's
"Redis CPU per renewal", and what a per-slot change stamp would save.

A private cluster-enabled redis-server on a free loopback port owns the
slots 0-5460 (one master's share of three) and holds --groups groups in
them, laid out as leasehold lays them out on a cluster: the lease key
leader:{name} (a string with a TTL), its fencing counter and holder record
(a hash) beside it, and one stamp key per slot. Batches of --batch groups
drawn at random go to a script that renews each group in a given shape,
keys in ARGV across slots (as leasehold's node batches do); the server's own
CPU (INFO cpu, user + sys) is divided by the groups renewed.

    bench/cluster_node_floor.py [--groups 33333] [--batch 64] [--runs 2]

Shapes, per group:
  today: GET lease, HMGET holder (incarnation, bid flag), PEXPIRE lease;
  slot stamp: MGET lease and its slot's stamp (one slot: one call), PEXPIRE;
  lease only: GET lease, PEXPIRE (a check-and-extend with nothing else);
  PEXPIRE only: no check (less than any renewal can do).
"""
import argparse
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time

SLOTS_OWNED = 5461  # 0-5460: the first of three masters


def crc16(data: bytes) -> int:
    crc = 0
    for byte in data:
        crc ^= byte << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) if crc & 0x8000 else (crc << 1)
            crc &= 0xFFFF
    return crc


def key_slot(key: str) -> int:
    start = key.find("{")
    if start >= 0:
        end = key.find("}", start + 1)
        if end > start + 1:
            key = key[start + 1:end]
    return crc16(key.encode()) % 16384


class Connection:
    def __init__(self, port: int):
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.buffer = b""

    def send(self, *commands):
        out = []
        for args in commands:
            out.append(b"*%d\r\n" % len(args))
            for a in args:
                a = a if isinstance(a, bytes) else str(a).encode()
                out.append(b"$%d\r\n%s\r\n" % (len(a), a))
        self.sock.sendall(b"".join(out))

    def _line(self) -> bytes:
        while b"\r\n" not in self.buffer:
            self.buffer += self.sock.recv(1 << 16)
        line, self.buffer = self.buffer.split(b"\r\n", 1)
        return line

    def reply(self):
        line = self._line()
        kind, rest = line[:1], line[1:]
        if kind == b"+":
            return rest.decode()
        if kind == b"-":
            raise RuntimeError(rest.decode())
        if kind == b":":
            return int(rest)
        if kind == b"$":
            n = int(rest)
            if n < 0:
                return None
            while len(self.buffer) < n + 2:
                self.buffer += self.sock.recv(1 << 16)
            data, self.buffer = self.buffer[:n], self.buffer[n + 2:]
            return data.decode()
        if kind == b"*":
            n = int(rest)
            return None if n < 0 else [self.reply() for _ in range(n)]
        raise RuntimeError("unexpected reply %r" % line)

    def call(self, *args):
        self.send(args)
        return self.reply()


HEAD = "#!lua flags=allow-cross-slot-keys\n"
SHAPES = {
    # ARGV: id, ttl, incarnation, then per group: lease key, holder key, stamp key.
    "today: GET, HMGET holder, PEXPIRE": HEAD + """
for i = 4, #ARGV, 3 do
  if redis.call('GET', ARGV[i]) == ARGV[1] then
    local record = redis.call('HMGET', ARGV[i + 1], 'incarnation', 'bid')
    if record[1] == ARGV[3] then redis.call('PEXPIRE', ARGV[i], ARGV[2]) end
  end
end
return 1""",
    "slot stamp: MGET lease + stamp, PEXPIRE": HEAD + """
for i = 4, #ARGV, 3 do
  local values = redis.call('MGET', ARGV[i], ARGV[i + 2])
  if values[1] == ARGV[1] and values[2] then redis.call('PEXPIRE', ARGV[i], ARGV[2]) end
end
return 1""",
    "lease only: GET, PEXPIRE": HEAD + """
for i = 4, #ARGV, 3 do
  if redis.call('GET', ARGV[i]) == ARGV[1] then redis.call('PEXPIRE', ARGV[i], ARGV[2]) end
end
return 1""",
    "PEXPIRE only": HEAD + """
for i = 4, #ARGV, 3 do redis.call('PEXPIRE', ARGV[i], ARGV[2]) end
return 1""",
}


def free_port() -> int:
    # The cluster bus listens on port + 10000, which must be a port too.
    rng = random.Random()
    while True:
        port = rng.randrange(20000, 55000)
        try:
            for p in (port, port + 10000):
                with socket.socket() as probe:
                    probe.bind(("127.0.0.1", p))
            return port
        except OSError:
            continue


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--groups", type=int, default=33333)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--renewals", type=int, default=400000, help="groups renewed per shape and run")
    args = parser.parse_args()
    if args.groups < args.batch or args.batch < 1:
        parser.error("--groups must be at least --batch, and --batch at least 1")
    if not shutil.which("redis-server"):
        print("cluster_node_floor.py: redis-server not found (apt install redis-server)", file=sys.stderr)
        return 2

    port = free_port()
    workdir = tempfile.mkdtemp()
    server = subprocess.Popen(
        ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
         "--cluster-enabled", "yes", "--cluster-require-full-coverage", "no",
         "--cluster-config-file", os.path.join(workdir, "nodes.conf"),
         "--dir", workdir, "--logfile", os.path.join(workdir, "redis.log")])
    try:
        for _ in range(100):
            try:
                conn = Connection(port)
                conn.call("PING")
                break
            except OSError:
                time.sleep(0.05)
        else:
            print("cluster_node_floor.py: redis-server did not start", file=sys.stderr)
            return 1
        conn.call("CLUSTER", "ADDSLOTSRANGE", 0, SLOTS_OWNED - 1)
        for _ in range(100):
            if "cluster_state:ok" in conn.call("CLUSTER", "INFO"):
                break
            time.sleep(0.05)
        else:
            print("cluster_node_floor.py: the one-node cluster did not reach cluster_state:ok", file=sys.stderr)
            return 1

        # One stamp key per owned slot, named with a tag that lands in it.
        stamp_of_slot = {}
        n = 0
        while len(stamp_of_slot) < SLOTS_OWNED:
            tag = "t%d" % n
            n += 1
            slot = key_slot(tag)
            if slot < SLOTS_OWNED and slot not in stamp_of_slot:
                stamp_of_slot[slot] = "leader:{%s}:stamp" % tag
        # Groups whose slot this master owns.
        member, incarnation, ttl = "member-0123456789abcdef", "incarnation-42", "900000000"
        groups = []
        n = 0
        while len(groups) < args.groups:
            name = "group-%d" % n
            n += 1
            slot = key_slot(name)
            if slot < SLOTS_OWNED:
                lease = "leader:{%s}" % name
                groups.append((lease, lease + ":holder", stamp_of_slot[slot]))
        pending = 0
        for slot, stamp in stamp_of_slot.items():
            conn.send(("SET", stamp, "1700000000.123456#7"))
            pending += 1
        for lease, holder, _ in groups:
            conn.send(("SET", lease, member, "PX", ttl), ("SET", lease + ":token", 17),
                      ("HSET", holder, "incarnation", incarnation, "priority", 0, "bid", 0))
            pending += 3
            if pending > 3000:
                for _ in range(pending):
                    conn.reply()
                pending = 0
        for _ in range(pending):
            conn.reply()

        shas = {label: conn.call("SCRIPT", "LOAD", body) for label, body in SHAPES.items()}

        def cpu() -> float:
            info = conn.call("INFO", "cpu")
            fields = dict(line.split(":", 1) for line in info.split("\r\n") if ":" in line)
            return float(fields["used_cpu_user"]) + float(fields["used_cpu_sys"])

        rng = random.Random(1)
        version = conn.call("INFO", "server").split("redis_version:")[1].split("\r\n")[0]
        print("Redis %s, cluster-enabled, slots 0-%d, %d groups (%d keys), batches of %d, %d cores, load %s"
              % (version, SLOTS_OWNED - 1, len(groups), conn.call("DBSIZE"), args.batch, os.cpu_count(),
                 open("/proc/loadavg").read().split()[0]))
        print()
        print("| shape | Redis CPU per renewal, µs |")
        print("| --- | ---: |")
        batches = args.renewals // args.batch
        for run in range(1, args.runs + 1):
            for label, sha in shas.items():
                before = cpu()
                in_flight = 0
                for _ in range(batches):
                    argv = ["EVALSHA", sha, 0, member, ttl, incarnation]
                    for lease, holder, stamp in rng.sample(groups, args.batch):
                        argv += [lease, holder, stamp]
                    conn.send(argv)
                    in_flight += 1
                    if in_flight == 4:  # a few batches in flight, as a busy elector keeps them
                        conn.reply()
                        in_flight -= 1
                for _ in range(in_flight):
                    conn.reply()
                spent = cpu() - before
                print("| run %d: %s | %.2f |" % (run, label, spent / (batches * args.batch) * 1e6))
        return 0
    finally:
        server.kill()
        server.wait()
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())

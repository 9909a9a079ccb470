#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
# nat_fwd_diff.py - forwards, corpora, traffic and verdicts for nat_fwd_diff.t.
#
#   gen SEED N DIR        N random non-overlapping forwards on r1 and a corpus
#                         of one-packet inbound flows; writes DIR/forwards.json,
#                         DIR/xdpr.txt (`nat add in` words, one forward a line),
#                         DIR/nft.txt (the same forwards as an nft ruleset),
#                         DIR/corpus.json, DIR/servers.json, DIR/expect.txt
#                         (what the inside servers must see, by the model).
#   serve ADDR DIR        (inside host ADDR) listen on the forwards' inside
#                         TCP and UDP ports of ADDR but those that are 0 mod 7
#                         (closed: RST / port unreachable); UDP answers
#                         "PEER:PORT/LOCALPORT".
#   send DIR CLIENT       (outside client) send the corpus flows of CLIENT: one
#                         socket each, TCP connect() (a SYN) or one datagram.
#   inside DIR JSON...    what the inside captures (nat_pcap.py JSON) saw of
#                         the corpus: one line per distinct
#                         "proto src:sport > dst:dport", sorted.
#   replies DIR JSON...   what came back to the clients (captures on their
#                         links) about corpus flows: one line per distinct reply.
import json, os, random, select, socket, sys, time

PUB, POOL = "10.0.2.1", "198.51.100.5"
INSIDE = ["10.0.1.2", "10.0.3.2"]
CLIENTS = ["10.0.2.2", "10.0.4.2"]
SPORT0 = 40000


def gen(seed, n, d):
    rnd = random.Random(seed)
    os.makedirs(d, exist_ok=True)
    fwds, used = [], {PUB: [], POOL: []}
    kinds = ["single", "single_same", "range", "range_same", "range_one"]
    tries = 0
    while len(fwds) < n and tries < 1000:
        tries += 1
        kind = kinds[len(fwds) % len(kinds)] if len(fwds) < len(kinds) else rnd.choice(kinds)
        proto = rnd.choice(["tcp", "udp", "tcp+udp"])
        addr = PUB if rnd.random() < 0.7 else POOL
        length = 1 if kind.startswith("single") else rnd.randint(2, 12)
        lo = rnd.randrange(10000, 30000)
        hi = lo + length - 1
        protos = {"tcp", "udp"} if proto == "tcp+udp" else {proto}
        # no overlap with a forward of a common protocol on the same address;
        # keep a free port either side so that the boundary flows are misses
        if any(f_lo - 1 <= hi and lo <= f_hi + 1 and protos & f_pr for f_lo, f_hi, f_pr in used[addr]):
            continue
        used[addr].append((lo, hi, protos))
        host = rnd.choice(INSIDE)
        if kind.endswith("same"):
            tlo = lo
        else:
            tlo = rnd.randrange(1000, 9000)
        thi = tlo if kind == "range_one" else tlo + length - 1
        fwds.append(dict(kind=kind, proto=proto, addr=addr, lo=lo, hi=hi, host=host, tlo=tlo, thi=thi,
                         addr_word=not (addr == PUB and rnd.random() < 0.5)))
    json.dump(fwds, open(d + "/forwards.json", "w"), indent=1)

    with open(d + "/xdpr.txt", "w") as f:
        for w in fwds:
            words = []
            if w["proto"] != "tcp+udp":
                words += ["proto", w["proto"]]
            if w["addr_word"]:
                words += ["addr", w["addr"]]
            words += ["dport", "%d" % w["lo"] if w["lo"] == w["hi"] else "%d-%d" % (w["lo"], w["hi"])]
            if w["kind"].endswith("same") and rnd.random() < 0.5:
                to = w["host"]
            elif w["tlo"] == w["thi"]:
                to = "%s:%d" % (w["host"], w["tlo"])
            else:
                to = "%s:%d-%d" % (w["host"], w["tlo"], w["thi"])
            f.write(" ".join(words + ["to", to]) + "\n")

    # nft: one rule per outside port (a range maps in order: lo+i -> tlo+i)
    with open(d + "/nft.txt", "w") as f:
        f.write("table ip fwddiff {\n\tchain pre {\n\t\ttype nat hook prerouting priority dstnat; policy accept;\n")
        for w in fwds:
            m = {"tcp": "tcp dport", "udp": "udp dport", "tcp+udp": "meta l4proto { tcp, udp } th dport"}[w["proto"]]
            if w["kind"] == "range_one":
                f.write("\t\tiifname \"r1\" ip daddr %s %s %d-%d dnat to %s:%d\n" % (w["addr"], m, w["lo"], w["hi"], w["host"], w["tlo"]))
                continue
            for i in range(w["hi"] - w["lo"] + 1):
                f.write("\t\tiifname \"r1\" ip daddr %s %s %d dnat to %s:%d\n" % (w["addr"], m, w["lo"] + i, w["host"], w["tlo"] + i))
        f.write("\t}\n}\n")

    # corpus: per forward its bounds, a middle port and the ports just outside,
    # both protocols; the same port on the other address; random misses
    flows, seen = [], set()

    def add(proto, addr, port):
        if (proto, addr, port) in seen or not 1 <= port <= 65535:
            return
        seen.add((proto, addr, port))
        i = len(flows)
        flows.append(dict(id=i, proto=proto, addr=addr, port=port,
                          client=CLIENTS[rnd.randrange(2)], sport=SPORT0 + i))

    for w in fwds:
        other = POOL if w["addr"] == PUB else PUB
        for p in {w["lo"], w["hi"], rnd.randint(w["lo"], w["hi"]), w["lo"] - 1, w["hi"] + 1}:
            for proto in ("tcp", "udp"):
                add(proto, w["addr"], p)
        add(rnd.choice(["tcp", "udp"]), other, w["lo"])
    for _ in range(12):
        add(rnd.choice(["tcp", "udp"]), rnd.choice([PUB, POOL]), rnd.randrange(10000, 30000))
    rnd.shuffle(flows)
    json.dump(flows, open(d + "/corpus.json", "w"), indent=1)

    servers = {h: {"tcp": set(), "udp": set()} for h in INSIDE}
    for w in fwds:
        for proto in (["tcp", "udp"] if w["proto"] == "tcp+udp" else [w["proto"]]):
            for p in range(w["tlo"], w["thi"] + 1):
                if p % 7:
                    servers[w["host"]][proto].add(p)
    json.dump({h: {k: sorted(v) for k, v in s.items()} for h, s in servers.items()},
              open(d + "/servers.json", "w"))

    exp = set()
    for fl in flows:
        for w in fwds:
            if w["addr"] == fl["addr"] and fl["proto"] in w["proto"] and w["lo"] <= fl["port"] <= w["hi"]:
                tp = w["tlo"] if w["kind"] == "range_one" else w["tlo"] + fl["port"] - w["lo"]
                exp.add("%s %s:%d > %s:%d" % (fl["proto"], fl["client"], fl["sport"], w["host"], tp))
    open(d + "/expect.txt", "w").write("".join(x + "\n" for x in sorted(exp)))


def serve(addr, d):
    cfg = json.load(open(d + "/servers.json"))[addr]
    udp, tcp = {}, []
    for p in cfg["udp"]:
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((addr, p))
        udp[s] = p
    for p in cfg["tcp"]:
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((addr, p))
        s.listen(256)
        tcp.append(s)
    open(d + "/serving." + addr, "w").write("%d udp %d tcp\n" % (len(udp), len(tcp)))
    while True:
        for s in select.select(list(udp), [], [], 5)[0]:
            data, frm = s.recvfrom(65536)
            try:
                s.sendto(("%s:%d/%d" % (frm[0], frm[1], udp[s])).encode(), frm)
            except OSError:
                pass


def send(d, client):
    socks = []
    for fl in json.load(open(d + "/corpus.json")):
        if fl["client"] != client:
            continue
        t = socket.SOCK_STREAM if fl["proto"] == "tcp" else socket.SOCK_DGRAM
        s = socket.socket(socket.AF_INET, t)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((client, fl["sport"]))
        if t == socket.SOCK_STREAM:
            s.setblocking(False)
            s.connect_ex((fl["addr"], fl["port"]))
        else:
            s.sendto(b"flow %d" % fl["id"], (fl["addr"], fl["port"]))
        socks.append(s)
        time.sleep(0.005)
    time.sleep(2.5)          # replies land (no SYN is sent again before 1 s)
    for s in socks:
        if s.type == socket.SOCK_STREAM:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\1\0\0\0\0\0\0\0")
        s.close()


def frames(paths):
    out = []
    for p in paths:
        out += json.load(open(p))
    return out


def inside(d, paths):
    sports = {(fl["client"], fl["sport"]) for fl in json.load(open(d + "/corpus.json"))}
    lines = set()
    for f in frames(paths):
        if f.get("proto") == 6 and f.get("tcp_flags", 0) & 0x12 != 0x02:
            continue        # only SYNs: what starts a flow
        if f.get("proto") not in (6, 17) or "sport" not in f:
            continue
        tag = "" if (f["src"], f["sport"]) in sports else " (not a corpus source)"
        if f["dst"] not in INSIDE:
            continue
        lines.add("%s %s:%d > %s:%d%s" % ("tcp" if f["proto"] == 6 else "udp", f["src"], f["sport"],
                                          f["dst"], f["dport"], tag))
    print("\n".join(sorted(lines)))


def replies(d, paths):
    byport = {(fl["client"], fl["sport"]): fl for fl in json.load(open(d + "/corpus.json"))}
    lines = set()
    for f in frames(paths):
        if f.get("proto") in (6, 17) and "dport" in f:
            fl = byport.get((f["dst"], f["dport"]))
            if not fl:
                continue
            what = ("flags 0x%02x" % (f["tcp_flags"] & 0x17)) if f["proto"] == 6 else "data " + f.get("text", "")
            lines.add("flow %s %s:%d->%s:%d: %s from %s:%d %s" % (fl["proto"], fl["client"], fl["sport"], fl["addr"],
                                                             fl["port"], "tcp" if f["proto"] == 6 else "udp",
                                                             f["src"], f["sport"], what))
        elif f.get("proto") == 1 and f.get("q"):
            q = f["q"]
            fl = byport.get((q.get("src"), q.get("sport")))
            if not fl:
                continue
            lines.add("flow %s %s:%d->%s:%d: icmp %d/%d from %s quoting %s:%s>%s:%s proto %s" % (
                fl["proto"], fl["client"], fl["sport"], fl["addr"], fl["port"], f["icmp_type"], f["icmp_code"],
                f["src"], q.get("src"), q.get("sport"), q.get("dst"), q.get("dport"), q.get("proto")))
    print("\n".join(sorted(lines)))


a = sys.argv[1:]
if a[0] == "gen":
    gen(int(a[1]), int(a[2]), a[3])
elif a[0] == "serve":
    serve(a[1], a[2])
elif a[0] == "send":
    send(a[1], a[2])
elif a[0] == "inside":
    inside(a[1], a[2:])
elif a[0] == "replies":
    replies(a[1], a[2:])
else:
    sys.exit("unknown command " + a[0])

#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""filter_rules.py - rule lists for the filter bench (bench/run --filter).

  filter_rules.py xdpr   N KIND [OPTIONS]   rules for `xdpr filter load` (words after "filter add")
  filter_rules.py nft    N KIND [OPTIONS]   the same list as one nft forward chain (a rule each)
  filter_rules.py nftset N KIND [OPTIONS]   the same list as nft sets, one rule per rule shape
  filter_rules.py analyze FILE [OPTIONS]    what xdpr's classifier does for one bench packet
  filter_rules.py copies FLOWS [OPTIONS]    where the bench's established flows' per-CPU copies
                                            fall (xdpr_flt_hot): sets used, and the share of flows
                                            and of packets that miss with 2 ways (newest first),
                                            3 ways (live copies kept), as the flows take turns

N rules that match none of the bench's traffic come first, then the final
accept that matches it.  KIND:
  mixed  the shapes of a real forward policy: source and destination
         blocklists (/8 to /32), service ports and port ranges for TCP and
         UDP, ICMP, other protocols, interface rules; some prefixes contain
         the traffic's addresses (the rule fails on another field).  Shapes
         are shuffled, so most 64-rule words hold rules that leave some
         field unconstrained: the candidate words survive the summaries.
  same   every rule names the traffic's protocol and destination port and
         fails on one other field only (source or destination prefix, or
         source port range): candidate words survive and each costs three
         field look-ups before it is ruled out.
Every non-matching rule drops, so the set form (grouping rules by shape)
is equivalent to the list whatever the order.

The traffic (defaults: the bench's IPv4 UDP): sources 10.71.1.2 (established
flows) and 10.72.0.0/16 (new flows), destination 10.71.2.2, source ports
10000-59999, destination port 9, in dev IN, out dev OUT.  With -6 (the
bench's -6): 2001:db8:71:1::2 and 2001:db8:72::/112 to 2001:db8:71:2::2, the
same shapes with IPv6 prefixes (/16 to /128, in 2000::/3) and ICMPv6.
"""
import argparse
import ipaddress
import random
import sys

# the traffic, per family: sources, destinations, the final accept's destination
TRAFFIC = {
    4: {"src": [ipaddress.ip_network("10.71.1.2/32"), ipaddress.ip_network("10.72.0.0/16")],
        "dst": [ipaddress.ip_network("10.71.2.2/32")], "final": ipaddress.ip_network("10.71.2.0/24"),
        "icmp": "icmp", "bits": 32},
    6: {"src": [ipaddress.ip_network("2001:db8:71:1::2/128"), ipaddress.ip_network("2001:db8:72::/112")],
        "dst": [ipaddress.ip_network("2001:db8:71:2::2/128")],
        "final": ipaddress.ip_network("2001:db8:71:2::/64"), "icmp": "icmpv6", "bits": 128},
}
FAM = 4  # set by -6
SPORT = (10000, 59999)
DPORT = 9
TCP_SERVICES = [21, 22, 23, 25, 53, 80, 110, 135, 139, 143, 443, 445, 465, 587, 993, 995, 1433,
                1521, 2049, 3306, 3389, 5432, 5900, 6379, 8080, 8443, 9200, 11211, 27017]
UDP_SERVICES = [53, 67, 69, 123, 137, 138, 161, 162, 500, 514, 520, 1194, 1900, 4500, 5060, 5353,
                11211]
OTHER_PROTOS = [2, 41, 47, 50, 51, 89, 103, 112, 132]


def overlaps(net, nets):
    return any(net.overlaps(n) for n in nets)


class Gen:
    def __init__(self, seed, dev_in, dev_out):
        self.r = random.Random(seed)
        self.dev_in = dev_in      # the traffic's ingress device
        self.dev_out = dev_out    # the traffic's egress device

    def plen(self):
        # blocklists are mostly /24 and /32, some wide, some odd (IPv6: /48, /64 and /128)
        if FAM == 6:
            return self.r.choice([16, 19, 24, 29, 32, 32, 36, 40, 44, 48, 48, 48, 48, 56, 56, 64,
                                  64, 64, 64, 96, 112, 120, 128, 128, 128, 128])
        return self.r.choice([8, 12, 16, 16, 19, 20, 22, 24, 24, 24, 24, 26, 28, 29, 30,
                              32, 32, 32, 32, 32])

    def prefix(self, avoid):
        """A prefix that contains no traffic address in avoid."""
        width = TRAFFIC[FAM]["bits"]
        while True:
            plen = self.plen()
            addr = self.r.getrandbits(width)
            if FAM == 6:
                addr = addr & ((1 << 125) - 1) | (1 << 125)  # 2000::/3, global unicast
            net = ipaddress.ip_network((addr >> (width - plen) << (width - plen), plen))
            if net.is_multicast or net.prefixlen == 0 or (FAM == 4 and net.network_address.packed[0] in (0, 127)):
                continue
            if not overlaps(net, avoid):
                return net

    def near(self, nets):
        """A prefix that contains a traffic address (the rule fails elsewhere)."""
        a = int(self.r.choice(nets).network_address)
        width = TRAFFIC[FAM]["bits"]
        plen = self.r.choice([16, 24, 32, 40, 48, 56] if FAM == 6 else [8, 10, 12, 16, 20, 24])
        return ipaddress.ip_network((a >> (width - plen) << (width - plen), plen))

    def src(self, may_cover=False):
        if may_cover and self.r.random() < 0.25:
            return self.near(TRAFFIC[FAM]["src"])
        return self.prefix(TRAFFIC[FAM]["src"])

    def dst(self, may_cover=False):
        if may_cover and self.r.random() < 0.25:
            return self.near(TRAFFIC[FAM]["dst"])
        return self.prefix(TRAFFIC[FAM]["dst"])

    def ports(self, services, avoid=None):
        """A service port or a range (as (lo, hi)), never containing avoid (a (lo, hi))."""
        while True:
            if self.r.random() < 0.7:
                lo = hi = self.r.choice(services)
            elif self.r.random() < 0.5:
                lo = self.r.randrange(1, 65000)
                hi = min(65535, lo + self.r.choice([1, 9, 99, 255, 999]))
            else:
                lo = self.r.choice([1024, 6000, 30000, 49152, 60000])
                hi = min(65535, lo + self.r.randrange(10, 5000))
            if avoid is None or hi < avoid[0] or lo > avoid[1]:
                return (lo, hi)

    def mixed(self):
        r, k = self.r, self.r.random()
        if k < 0.30:
            return {"src": self.src()}
        if k < 0.38:
            return {"dst": self.dst()}
        if k < 0.48:
            return {"src": self.src(True), "proto": "tcp", "dport": self.ports(TCP_SERVICES)}
        if k < 0.56:
            return {"dst": self.dst(True), "proto": "tcp", "dport": self.ports(TCP_SERVICES)}
        if k < 0.64:
            return {"proto": "tcp", "dport": self.ports(TCP_SERVICES)}
        if k < 0.72:
            return {"proto": "udp", "dport": self.ports(UDP_SERVICES, (DPORT, DPORT))}
        if k < 0.77:
            return {"proto": "udp", "sport": self.ports(UDP_SERVICES, SPORT)}
        if k < 0.82:
            return {"src": self.src(True), "dst": self.dst(True), "proto": "udp",
                    "dport": self.ports(UDP_SERVICES, (DPORT, DPORT))}
        if k < 0.87:
            return {"src": self.src(True), "proto": TRAFFIC[FAM]["icmp"]}
        if k < 0.90:
            return {"src": self.src(True), "proto": str(r.choice(OTHER_PROTOS))}
        if k < 0.95:
            return {"in": self.dev_out, "src": self.src(True)}
        return {"out": self.dev_in, "dst": self.dst(True)}

    def same(self):
        k = self.r.random()
        if k < 0.5:
            rule = {"src": self.src()}
        elif k < 0.75:
            rule = {"dst": self.dst()}
        else:
            rule = {"sport": self.ports(UDP_SERVICES, SPORT)}
        rule.update({"proto": "udp", "dport": (DPORT, DPORT)})
        return rule


def rules(n, kind, seed, dev_in, dev_out):
    g = Gen(seed, dev_in, dev_out)
    out = []
    for _ in range(n):
        rule = g.mixed() if kind == "mixed" else g.same()
        rule["action"] = "drop"
        out.append(rule)
    return out + [{"dst": TRAFFIC[FAM]["final"], "proto": "udp", "dport": (DPORT, DPORT), "action": "accept"}]


def prange(p):
    return str(p[0]) if p[0] == p[1] else "%d-%d" % p


def xdpr_line(rule):
    w = []
    for k in ("in", "out", "src", "dst", "proto", "sport", "dport"):
        if k in rule:
            v = rule[k]
            w += [k, prange(v) if isinstance(v, tuple) else str(v)]
    return " ".join(w + [rule["action"]])


def nft_match(rule):
    w = []
    if "in" in rule:
        w.append('iif "%s"' % rule["in"])
    if "out" in rule:
        w.append('oif "%s"' % rule["out"])
    ip = "ip6" if FAM == 6 else "ip"
    if "src" in rule:
        w.append("%s saddr %s" % (ip, rule["src"]))
    if "dst" in rule:
        w.append("%s daddr %s" % (ip, rule["dst"]))
    p = rule.get("proto")
    if p in ("tcp", "udp") and ("sport" in rule or "dport" in rule):
        for k in ("sport", "dport"):
            if k in rule:
                w.append("%s %s %s" % (p, k, prange(rule[k])))
    elif p is not None:
        w.append("meta l4proto %s" % p)
    return " ".join(w)


def nft_head(table):
    return ["table inet %s {" % table,
            "\tchain forward {",
            "\t\ttype filter hook forward priority filter; policy drop;",
            "\t\tct state established,related accept"]


def nft_linear(rs, table):
    out = nft_head(table)
    out += ["\t\t%s %s" % (nft_match(r), r["action"]) for r in rs]
    return out + ["\t}", "}"]


# set form: one set per shape; key fields in this order
SET_FIELDS = [("in", "iif", "iface_index"), ("out", "oif", "iface_index"),
              ("src", "ip saddr", "ipv4_addr"), ("dst", "ip daddr", "ipv4_addr"),
              ("proto", "meta l4proto", "inet_proto"),
              ("sport", "th sport", "inet_service"), ("dport", "th dport", "inet_service")]


def set_elem(rule, fields):
    v = []
    for k, _, _ in fields:
        x = rule[k]
        if isinstance(x, tuple):
            v.append(prange(x))
        elif k in ("in", "out"):
            v.append('"%s"' % x)
        else:
            v.append(str(x))
    return " . ".join(v)


def nft_sets(rs, table):
    """Drop rules grouped by shape into interval sets, one rule each, in the order a shape
    first appears.  A shape's elements that overlap (nft refuses that in a concatenation)
    go to a second set of the shape, and so on: every drop rule is kept."""
    order, groups = [], {}
    final = rs[-1]
    for r in rs[:-1]:
        shape = tuple(k for k, _, _ in SET_FIELDS if k in r)
        if shape not in groups:
            groups[shape] = []
            order.append(shape)
        groups[shape].append(r)
    sets, refs = [], []
    for shape in order:
        fields = [f for f in SET_FIELDS if f[0] in shape]
        concat = len(fields) > 1
        if concat:
            parts = disjoint_parts(groups[shape], fields)
        else:
            # one field: one interval set, auto-merge folds overlapping prefixes and ranges
            parts = [sorted({set_elem(r, fields) for r in groups[shape]})]
        for elems in parts:
            name = "s%d_%s" % (len(refs), "_".join(shape))
            sets += ["\tset %s {" % name,
                     "\t\ttype %s" % " . ".join(f[2] for f in fields),
                     "\t\tflags interval%s" % ("" if concat else "; auto-merge"),
                     "\t\telements = { %s }" % ", ".join(elems),
                     "\t}"]
            # th: the transport header's ports, whatever the protocol (the key names it)
            refs.append("\t\t%s @%s drop" % (" . ".join(f[1] for f in fields), name))
    out = ["table inet %s {" % table] + sets
    out += nft_head(table)[1:]
    out += refs
    out += ["\t\t%s %s" % (nft_match(final), final["action"]), "\t}", "}"]
    return out


def span(rule, k):
    """A field's value as an interval of integers."""
    x = rule[k]
    if isinstance(x, tuple):
        return x
    if k in ("src", "dst"):
        return (int(x.network_address), int(x.broadcast_address))
    return None  # an exact value (protocol, interface): compared as is


def disjoint_parts(group, fields):
    """A shape's elements as lists without two that overlap.  All rules drop, so
    an element inside another is left out, and with one interval field the
    intervals of equal exact values are merged; what still overlaps goes to
    the first list where it does not (first fit)."""
    idx = [i for i, (k, _, _) in enumerate(fields) if span(group[0], k) is not None]
    boxes = {}
    for r in group:
        boxes[tuple(span(r, k) or r[k] for k, _, _ in fields)] = r
    if len(idx) == 1:
        i, merged = idx[0], {}
        for b in boxes:
            merged.setdefault(b[:i] + b[i + 1:], []).append(b[i])
        out = []
        for key, ivs in merged.items():
            ivs.sort()
            run = [list(ivs[0])]
            for lo, hi in ivs[1:]:
                if lo <= run[-1][1] + 1:
                    run[-1][1] = max(run[-1][1], hi)
                else:
                    run.append([lo, hi])
            out += [key[:i] + ((lo, hi),) + key[i:] for lo, hi in run]
        return [[box_elem(b, fields) for b in sorted(out, key=str)]]

    def bucket(b):
        # addresses are never wider than /8 (IPv6: /16): overlapping ones share the first byte (two)
        return tuple(b[i][0] >> (112 if FAM == 6 else 24) if fields[i][0] in ("src", "dst") else
                     (0 if i in idx else b[i]) for i in range(len(b)))

    def rel(a, b):  # 2: a inside b, 1: they overlap, 0: disjoint
        if any(a[i] != b[i] for i in range(len(a)) if i not in idx):
            return 0
        if any(a[i][0] > b[i][1] or b[i][0] > a[i][1] for i in idx):
            return 0
        return 2 if all(b[i][0] <= a[i][0] and a[i][1] <= b[i][1] for i in idx) else 1

    by = {}
    for b in boxes:
        by.setdefault(bucket(b), []).append(b)
    # widest first, so an element inside another meets it first
    kept = [b for b in sorted(boxes, key=lambda b: [-(b[i][1] - b[i][0]) for i in idx])
            if not any(o != b and rel(b, o) == 2 and
                       (rel(o, b) != 2 or o < b) for o in by[bucket(b)])]
    parts = []  # [(boxes, {bucket: [boxes]})]
    for b in kept:
        for lst, index in parts:
            if not any(rel(b, o) for o in index.get(bucket(b), [])):
                lst.append(b)
                index.setdefault(bucket(b), []).append(b)
                break
        else:
            parts.append(([b], {bucket(b): [b]}))
    return [[box_elem(b, fields) for b in lst] for lst, _ in parts]


def box_elem(b, fields):
    v = []
    for (k, _, _), x in zip(fields, b):
        if k in ("src", "dst"):
            lo, hi = x
            plen = TRAFFIC[FAM]["bits"] - (hi - lo + 1).bit_length() + 1
            v.append("%s/%d" % (ipaddress.ip_address(lo), plen))
        elif k in ("sport", "dport"):
            v.append(prange(tuple(x)))
        elif k in ("in", "out"):
            v.append('"%s"' % x)
        else:
            v.append(str(x))
    return " . ".join(v)


# ------------------------------------------------------------------ analyze

FIELDS = ["src", "dst", "sport", "dport", "proto", "in", "out", "state"]


def parse_xdpr(line):
    w = line.split()
    r = {"action": w[-1]}
    for i in range(0, len(w) - 1, 2):
        k, v = w[i], w[i + 1]
        if k in ("src", "dst"):
            r[k] = ipaddress.ip_network(v)
        elif k in ("sport", "dport"):
            lo, _, hi = v.partition("-")
            r[k] = (int(lo), int(hi or lo))
        else:
            r[k] = v
    return r


def accepts(rule, f, pkt):
    v = rule[f]
    if f in ("src", "dst"):
        return pkt[f] in v
    if f in ("sport", "dport"):
        return v[0] <= pkt[f] <= v[1]
    if f == "proto":
        return {"tcp": 6, "udp": 17, "icmp": 1, "icmpv6": 58}.get(v, None) == pkt[f] or v == str(pkt[f])
    return v == pkt[f]


def shape(r):
    """The fields a rule constrains, as the compiler groups them."""
    return tuple(f for f in FIELDS if f in r)


def analyze(path, pkt):
    """What xdpr's classifier does for pkt (xdpr_shared.h, bit layout): rules
    grouped by shape, each group from a word of its own (merged smallest
    first only when that would not fit 512 words); the candidate words the
    summaries leave; the words visited (a group's words after its first
    match are skipped); field look-ups (the fields with rules in the word
    first, each until the word's AND is empty)."""
    rs = [parse_xdpr(l) for l in open(path) if l.strip() and not l.startswith("#")]
    groups, order = {}, []
    for p, r in enumerate(rs):
        k = shape(r)
        if k not in groups:
            groups[k] = []
            order.append(k)
        groups[k].append(p)
    glist = [groups[k] for k in order]
    while len(glist) > 1 and sum((len(g) + 63) // 64 for g in glist) > 512:
        glist.sort(key=len)
        a, b = glist[0], glist[1]
        glist = [sorted(a + b)] + glist[2:]
        glist.sort(key=lambda g: g[0])
    words = []
    for g in glist:
        for i in range(0, len(g), 64):
            words.append(g[i:i + 64])
    cand = visited = calls = 0
    best, skip_group = None, None
    for gi, g in enumerate(glist):
        matched = False
        for i in range(0, len(g), 64):
            part = [rs[p] for p in g[i:i + 64]]
            ok = {f: [f not in r or accepts(r, f, pkt) for r in part] for f in FIELDS}
            if not all(any(col) for col in ok.values()):
                continue      # pruned by the summaries
            cand += 1
            if matched:
                continue      # the group has its match
            visited += 1
            m = [True] * len(part)
            constrained = [f for f in FIELDS if any(f in r for r in part)]
            for f in constrained + [f for f in FIELDS if f not in constrained]:
                m = [x and y for x, y in zip(m, ok[f])]
                calls += 1
                if not any(m):
                    break
            else:
                pos = g[i + m.index(True)]
                best = pos if best is None else min(best, pos)
                matched = True
    return {"rules": len(rs), "shapes": len(order), "groups": len(glist), "words": len(words),
            "candidate_words": cand, "words_visited": visited, "field_lookups": calls,
            "first_match": best}


def hot_set(s, d, sp, dp, proto, bits=13):
    """xdpr_flt_hot_set_of (bpf/xdpr_shared.h): network-order words as x86 loads them
    (the ports word: the source port's two bytes, then the destination port's)."""
    m = 0xffffffff
    h = (s * 0x9e3779b1 & m) ^ (d * 0x85ebca77 & m) ^ (((dp << 16) | sp) * 0xc2b2ae3d & m) ^ proto
    h ^= h >> 15
    h = h * 0x2c1b3c6d & m
    return h >> (32 - bits)


def copies(flows, src, sport):
    """The bench's flows src:sport+f -> 10.71.2.2:9 (UDP, that direction's tuple) over the copy sets."""
    le32 = lambda ip: int.from_bytes(ipaddress.ip_address(ip).packed, "little")
    le16 = lambda p: int.from_bytes(p.to_bytes(2, "big"), "little")
    s, d = le32(src), le32("10.71.2.2")
    per = {}
    for f in range(flows):
        k = hot_set(s, d, le16(sport + f), le16(DPORT), 17)
        per[k] = per.get(k, 0) + 1
    r = {"flows": flows, "sets_used": len(per)}
    # least recently used, 2 ways: a set of more flows than ways misses on every packet of each
    r["lru2_flows_missing"] = sum(n for n in per.values() if n > 2) / flows
    # 3 ways, live copies kept: only the flows beyond the third miss
    r["keep3_packets_missing"] = sum(n - 3 for n in per.values() if n > 3) / flows
    return r


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("what", choices=["xdpr", "nft", "nftset", "analyze", "copies"])
    ap.add_argument("n", help="rules in front of the final accept (analyze: the xdpr rule file)")
    ap.add_argument("kind", nargs="?", default="mixed", choices=["mixed", "same"])
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--in", dest="dev_in", default="r0", help="the traffic's ingress device")
    ap.add_argument("--out", dest="dev_out", default="r1", help="the traffic's egress device")
    ap.add_argument("--table", default="xbench_flt")
    ap.add_argument("--src", default="10.71.1.2", help="analyze: the packet's source")
    ap.add_argument("--sport", type=int, default=10000)
    ap.add_argument("-6", dest="v6", action="store_true", help="IPv6 rules and traffic (not for copies)")
    a = ap.parse_args()
    if a.v6:
        global FAM, SET_FIELDS
        FAM = 6
        SET_FIELDS = [(k, m.replace("ip ", "ip6 "), t.replace("ipv4", "ipv6")) for k, m, t in SET_FIELDS]
        if a.what == "copies":
            ap.error("copies: the per-CPU copies are IPv4 only")
        if a.src == "10.71.1.2":
            a.src = "2001:db8:71:1::2"
    if a.what == "copies":
        r = copies(int(a.n), a.src, a.sport)
        print("{" + ",".join('"%s":%s' % (k, round(v, 4) if isinstance(v, float) else v)
                             for k, v in r.items()) + "}")
        return
    if a.what == "analyze":
        pkt = {"src": ipaddress.ip_address(a.src), "dst": TRAFFIC[FAM]["dst"][0].network_address,
               "sport": a.sport, "dport": DPORT, "proto": 17, "in": a.dev_in, "out": a.dev_out,
               "state": "new"}
        r = analyze(a.n, pkt)
        print("{" + ",".join('"%s":%s' % (k, "null" if v is None else v) for k, v in r.items()) + "}")
        return
    rs = rules(int(a.n), a.kind, a.seed, a.dev_in, a.dev_out)
    if a.what == "xdpr":
        lines = [xdpr_line(r) for r in rs]
    elif a.what == "nft":
        lines = nft_linear(rs, a.table)
    else:
        lines = nft_sets(rs, a.table)
    sys.stdout.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
#
# tests/bench/report.py - the benchmark suite's table and plot data
#
# Reads a results dir written by tests/bench/run.sh (raw.tsv: every sample;
# machine.txt, command.txt, params.txt) and writes results.md (markdown: the
# medians, the ratios to each baseline, where each target of the issue
# stands) and plot.dat (for tests/bench/plot.gp).  It only reports what
# raw.tsv holds: a workload that was not run shows as "-", one that could
# not be measured as "n/a" with the reason.
#
# usage: report.py RESULTS_DIR

import math
import os
import statistics
import sys


def load(path):
    samples = {}
    with open(path) as f:
        next(f)
        for line in f:
            key, system, metric, value = line.rstrip("\n").split("\t", 3)
            samples.setdefault((key, system, metric), []).append(value)
    return samples


def read_params(path):
    params = {}
    with open(path) as f:
        for line in f:
            for kv in line.split():
                k, _, v = kv.partition("=")
                params[k] = v
    return params


class Report:
    def __init__(self, samples):
        self.samples = samples

    def med(self, key, system, metric):
        v = self.samples.get((key, system, metric))
        if not v:
            return None
        try:
            return statistics.median(float(x) for x in v)
        except ValueError:
            return None

    def count(self, key, system, metric):
        return len(self.samples.get((key, system, metric), []))

    def text(self, key, system, metric):
        v = self.samples.get((key, system, metric))
        return v[0] if v else None


def fmt_num(x):
    if x is None:
        return "-"
    if x >= 100:
        return "{:,.0f}".format(x)
    if x >= 10:
        return "{:.1f}".format(x)
    return "{:.2f}".format(x)


def fmt_time_ms(ms):
    if ms is None:
        return "-"
    if ms >= 1000:
        return "{:.2f} s".format(ms / 1000)
    return fmt_num(ms) + " ms"


def fmt_time_us(us):
    if us is None:
        return "-"
    if us >= 1000:
        return fmt_time_ms(us / 1000)
    return fmt_num(us) + " µs"


def fmt_rate(r):
    return "-" if r is None else fmt_num(r) + "/s"


def fmt_bytes(b):
    if b is None:
        return "-"
    return "{:.1f} MiB".format(b / 1048576)


def short(n):
    if n >= 1000000 and n % 1000000 == 0:
        return "{}M".format(n // 1000000)
    if n >= 1000 and n % 1000 == 0:
        return "{}k".format(n // 1000)
    return str(n)


def ratio(a, b):
    if a is None or b is None or b <= 0:
        return None
    return a / b


def fmt_ratio(r):
    if r is None:
        return ""
    if r >= 10:
        return " (×{:.0f})".format(r)
    return " (×{:.2f})".format(r)


def fmt_share(r):
    return "" if r is None else " ({:.0f} %)".format(100 * r)


def main():
    out = sys.argv[1]
    rep = Report(load(os.path.join(out, "raw.tsv")))
    params = read_params(os.path.join(out, "params.txt"))
    with open(os.path.join(out, "command.txt")) as f:
        command = f.read().strip()
    with open(os.path.join(out, "machine.txt")) as f:
        machine = [l.rstrip("\n") for l in f if l.strip()]

    reps = params.get("reps", "?")
    read_keys = int(params.get("read_keys", 0))
    read_size = int(params.get("read_size", 0))
    tree_keys = int(params.get("tree_keys", 0))
    mem_size = int(params.get("mem_size", 0))
    mem_keys = [int(x) for x in params.get("mem_keys", "").split(",") if x]
    writers = [int(x) for x in params.get("writers", "").split(",") if x]

    md = []
    plot = []   # (label, etcdfs cost / baseline cost, target or None)
    targets = []    # (target, measured, verdict)

    def verdict(ok):
        if ok is None:
            return "not measured"
        return "**met**" if ok else "**missed**"

    md.append("# etcdfs benchmarks")
    md.append("")
    md.append("Produced by `{}` ({} repetitions of each measurement; "
              "every figure is the median).".format(command, reps))
    md.append("")
    md.append("Machine: " + "; ".join(machine) + ".")
    md.append("")

    # --- times: etcdfs against tmpfs, etcdctl and the helper ---
    md.append("## Times")
    md.append("")
    md.append("In brackets: etcdfs ÷ that baseline (×1 = as fast; "
              "above 1 = etcdfs is slower). Cold = a fresh mount; "
              "tmpfs has no cold state, so its cold and warm rows are "
              "the same command on the same files. etcdctl includes its "
              "process start; the helper is one range request over a "
              "kept-alive connection, timed in-process.")
    md.append("")
    md.append("| workload | etcdfs | tmpfs (floor) | etcdctl | helper |")
    md.append("|---|---|---|---|---|")

    def time_row(label, key, ctl_key, helper_key, plot_label=None,
                 target=None):
        e = rep.med(key, "etcdfs", "ms")
        t = rep.med(key, "tmpfs", "ms")
        c = rep.med(ctl_key, "etcdctl", "ms")
        h = rep.med(helper_key, "helper", "ms")
        if e is None and t is None:
            return None
        md.append("| {} | {} | {}{} | {}{} | {}{} |".format(
            label, fmt_time_ms(e),
            fmt_time_ms(t), fmt_ratio(ratio(e, t)),
            fmt_time_ms(c), fmt_ratio(ratio(e, c)),
            fmt_time_ms(h), fmt_ratio(ratio(e, h))))
        r = ratio(e, t)
        if plot_label and r is not None:
            plot.append((plot_label + " / tmpfs", r, target))
        return r

    subtree = "{:,} × {} B".format(read_keys, read_size)
    r_cat_cold = time_row("1. `cat dir/*`, {}, cold".format(subtree),
                          "cat.cold", "read.prefix", "read.prefix",
                          "cat cold", 3)
    r_cat_warm = time_row("1. `cat dir/*`, warm", "cat.warm",
                          "read.prefix", "read.prefix", "cat warm", 1.5)
    r_grep_cold = time_row("1. `grep -r`, {}, cold".format(subtree),
                           "grep.cold", "read.prefix", "read.prefix",
                           "grep cold", 3)
    r_grep_warm = time_row("1. `grep -r`, warm", "grep.warm",
                           "read.prefix", "read.prefix", "grep warm", 1.5)
    time_row("2. `ls -l`, {:,} entries, cold".format(read_keys), "ls.cold",
             "ls.keys", "ls.keys", "ls -l cold")
    time_row("2. `ls -l`, warm", "ls.warm", "ls.keys", "ls.keys",
             "ls -l warm")
    time_row("2. `find`, {:,} keys in a tree, cold".format(tree_keys),
             "find.cold", "find.keys", "find.keys", "find cold")
    time_row("2. `find`, warm", "find.warm", "find.keys", "find.keys",
             "find warm")
    md.append("")
    md.append("Baselines of rows 1: `etcdctl get --prefix` and one range "
              "request with values; rows 2: the same with keys only.")
    md.append("")

    def worst(*rs):
        rs = [r for r in rs if r is not None]
        return max(rs) if rs else None

    def max_target(name, r, limit):
        ok = None if r is None else r <= limit
        targets.append((name, "-" if r is None else "×{:.2f}".format(r),
                        verdict(ok)))

    max_target("subtree read cold within 3× tmpfs (worst of cat, grep)",
               worst(r_cat_cold, r_grep_cold), 3)
    max_target("subtree read warm within 1.5× tmpfs (worst of cat, grep)",
               worst(r_cat_warm, r_grep_warm), 1.5)

    # --- latencies ---
    md.append("## One key: latency")
    md.append("")
    md.append("Per operation, from the C program's clock around the "
              "syscalls (stat; open, read to end, close) or around "
              "`store_get` (one range request over a kept-alive "
              "connection). Cold: each of {} distinct keys once on a "
              "fresh mount; warm: {} operations going round 100 keys "
              "already seen.".format(params.get("cold_keys", "?"),
                                      params.get("lat_iters", "?")))
    md.append("")
    md.append("| operation | etcdfs p50 | etcdfs p99 | tmpfs p50 | "
              "tmpfs p99 | helper get p50 | helper get p99 |")
    md.append("|---|---|---|---|---|---|---|")
    lat_ratio = {}
    for op in ("stat", "read"):
        for state in ("cold", "warm"):
            key = "{}.{}".format(op, state)
            gk = "get." + state
            e50 = rep.med(key, "etcdfs", "p50_us")
            e99 = rep.med(key, "etcdfs", "p99_us")
            t50 = rep.med(key, "tmpfs", "p50_us")
            t99 = rep.med(key, "tmpfs", "p99_us")
            h50 = rep.med(gk, "helper", "p50_us")
            h99 = rep.med(gk, "helper", "p99_us")
            if e50 is None:
                continue
            md.append("| 3. {}, {} | {} | {} | {}{} | {}{} | {}{} | {}{} |"
                      .format(op, state, fmt_time_us(e50), fmt_time_us(e99),
                              fmt_time_us(t50), fmt_ratio(ratio(e50, t50)),
                              fmt_time_us(t99), fmt_ratio(ratio(e99, t99)),
                              fmt_time_us(h50), fmt_ratio(ratio(e50, h50)),
                              fmt_time_us(h99), fmt_ratio(ratio(e99, h99))))
            if state == "warm":
                r = ratio(e50, t50)
                lat_ratio[op] = (r, ratio(e99, t99))
                if r is not None:
                    plot.append(("{} warm p50 / tmpfs".format(op), r, 3))
            else:
                r = ratio(e50, h50)
                if r is not None:
                    plot.append(("{} cold p50 / helper get".format(op), r,
                                 None))
    md.append("")
    md.append("Ratios in brackets: etcdfs ÷ that column, at the same "
              "percentile.")
    md.append("")
    for op in ("stat", "read"):
        r50, r99 = lat_ratio.get(op, (None, None))
        ok = None if r50 is None else r50 <= 3
        targets.append(("warm {} within 3× tmpfs (p50; p99 in brackets)"
                        .format(op),
                        "-" if r50 is None else "×{:.2f} (×{:.2f})".format(
                            r50, r99 if r99 is not None else float("nan")),
                        verdict(ok)))

    # --- writes ---
    md.append("## Writes")
    md.append("")
    md.append("open/write/close of a 1 KiB value over a key that exists "
              "(4 keys per writer), against the helper's "
              "`store_guaranteed_update` (one compare-and-swap txn per "
              "value, as a commit of etcdfs) and `etcdctl put` (one "
              "process per value, `xargs -P` writers). In brackets: "
              "etcdfs's rate as a share of the baseline's.")
    md.append("")
    md.append("| writers | etcdfs | etcdfs p50 / p99 | helper txn | "
              "helper p50 / p99 | etcdctl put |")
    md.append("|---|---|---|---|---|---|")
    for w in writers:
        key = "write.{}".format(w)
        e = rep.med(key, "etcdfs", "rate")
        h = rep.med(key, "helper", "rate")
        c = rep.med(key, "etcdctl", "rate")
        if e is None and h is None:
            continue
        md.append("| 4. {} | {} | {} / {} | {}{} | {} / {} | {}{} |".format(
            w, fmt_rate(e),
            fmt_time_us(rep.med(key, "etcdfs", "p50_us")),
            fmt_time_us(rep.med(key, "etcdfs", "p99_us")),
            fmt_rate(h), fmt_share(ratio(e, h)),
            fmt_time_us(rep.med(key, "helper", "p50_us")),
            fmt_time_us(rep.med(key, "helper", "p99_us")),
            fmt_rate(c), fmt_share(ratio(e, c))))
        r = ratio(h, e)
        if r is not None:
            plot.append(("{} writer{}: txn rate / etcdfs".format(
                w, "s" if w > 1 else ""), r, 1 / 0.8 if w == 16 else None))
    md.append("")
    e16 = rep.med("write.16", "etcdfs", "rate")
    h16 = rep.med("write.16", "helper", "rate")
    s16 = ratio(e16, h16)
    targets.append(("16 writers at least 80 % of the helper's txn rate",
                    "-" if s16 is None else "{:.0f} %".format(100 * s16),
                    verdict(None if s16 is None else s16 >= 0.8)))

    # --- inotify ---
    md.append("## Remote change to inotify event")
    md.append("")
    na = rep.text("inotify", "etcdfs", "na")
    p50 = rep.med("inotify", "etcdfs", "p50_us")
    p99 = rep.med("inotify", "etcdfs", "p99_us")
    lost = rep.med("inotify", "etcdfs", "lost")
    if na is not None:
        md.append("n/a: " + na + ": an inotify watch on the mount did "
                  "not see a change made by another client. The figures "
                  "appear here once it does.")
        targets.append(("remote change to inotify event p99 under 20 ms",
                        "n/a", "not measured: " + na))
    elif p50 is not None:
        md.append("A key created, then changed, through the helper (one "
                  "txn, another client than the mount); the time until "
                  "an inotify watch on the mounted directory sees an "
                  "event naming it ({} changes per run).".format(
                      params.get("events", "?")))
        md.append("")
        md.append("| | p50 | p99 | lost (no event within 2 s) |")
        md.append("|---|---|---|---|")
        md.append("| 5. change → event | {} | {} | {:.0f} |".format(
            fmt_time_us(p50), fmt_time_us(p99), lost or 0))
        for kind, what in (("create", "a new key → CREATE"),
                           ("modify", "a changed key → MODIFY")):
            k50 = rep.med("inotify", "etcdfs", kind + "_p50_us")
            k99 = rep.med("inotify", "etcdfs", kind + "_p99_us")
            if k50 is not None:
                md.append("| 5. {} | {} | {} | |".format(
                    what, fmt_time_us(k50), fmt_time_us(k99)))
        ok = p99 < 20000 and not lost
        targets.append(("remote change to inotify event p99 under 20 ms",
                        fmt_time_us(p99) + ("" if not lost else
                                            ", {:.0f} lost".format(lost)),
                        verdict(ok)))
        plot.append(("inotify p99 / 20 ms", p99 / 20000, 1))
    else:
        md.append("-")
        targets.append(("remote change to inotify event p99 under 20 ms",
                        "-", verdict(None)))
    md.append("")

    # --- visibility ---
    md.append("## Another client's new key, readable")
    md.append("")
    v50 = rep.med("visible", "etcdfs", "visible_p50_us")
    if v50 is not None:
        vmax = rep.med("visible", "etcdfs", "visible_max_us")
        vput = rep.med("visible", "etcdfs", "put_p50_us")
        vlost = rep.med("visible", "etcdfs", "lost") or 0
        md.append("A key created through the helper (another client than "
                  "the mount) under 4 directories that did not exist; the "
                  "time from etcd's acknowledgement of the put until "
                  "open and read of its path on the mount give the value "
                  "(20 keys per run, the median of each run's median and "
                  "worst).")
        md.append("")
        md.append("| | median | worst | the put itself | lost (not "
                  "readable within 5 s) |")
        md.append("|---|---|---|---|---|")
        md.append("| 7. put acknowledged → readable | {} | {} | {} | "
                  "{:.0f} |".format(fmt_time_us(v50), fmt_time_us(vmax),
                                   fmt_time_us(vput), vlost))
        targets.append(("another client's new key 4 directories deep "
                        "readable within 5 ms (median)", fmt_time_us(v50),
                        verdict(v50 <= 5000 and not vlost)))
        plot.append(("new key readable / 5 ms", v50 / 5000, 1))
    else:
        md.append("-")
        targets.append(("another client's new key 4 directories deep "
                        "readable within 5 ms (median)", "-",
                        verdict(None)))
    md.append("")

    # --- memory ---
    md.append("## Memory, mount and list")
    md.append("")
    md.append("Trees of {} B values, 100 keys per directory. Raw = the "
              "bytes of the keys (with the prefix) plus the values; "
              "budget = 2 × raw + 150 B per key; peak RSS = the daemon's "
              "VmHWM after mounting and listing. Mount = from starting "
              "the daemon to a usable mountpoint; list = `find` over the "
              "fresh mount; the helper baseline is one `store_list` of "
              "the keys and values in pages of 1,000 keys, as the daemon "
              "lists at mount.".format(mem_size))
    md.append("")
    md.append("| keys | raw | budget | peak RSS | ÷ raw | ÷ budget | "
              "mount | list (`find`) | helper list |")
    md.append("|---|---|---|---|---|---|---|---|---|")
    for n in mem_keys:
        key = "mem.{}".format(n)
        raw = rep.med(key, "raw", "bytes")
        hwm = rep.med(key, "etcdfs", "hwm_kib")
        if raw is None:
            continue
        budget = 2 * raw + 150 * n
        hwm_b = None if hwm is None else hwm * 1024
        md.append("| 6. {:,} | {} | {} | {} | ×{} | ×{} | {} | {} | {} |"
                  .format(n, fmt_bytes(raw), fmt_bytes(budget),
                          fmt_bytes(hwm_b),
                          fmt_num(ratio(hwm_b, raw)),
                          fmt_num(ratio(hwm_b, budget)),
                          fmt_time_ms(rep.med(key, "etcdfs", "mount_ms")),
                          fmt_time_ms(rep.med(key, "etcdfs", "list_ms")),
                          fmt_time_ms(rep.med(key, "helper", "ms"))))
        r = ratio(hwm_b, budget)
        targets.append(("memory under 2× raw + 150 B/key, {:,} keys"
                        .format(n),
                        "-" if r is None else
                        "{} = ×{:.2f} of the budget".format(
                            fmt_bytes(hwm_b), r),
                        verdict(None if r is None else r < 1)))
        if r is not None:
            plot.append(("RSS {} keys / budget".format(short(n)), r, 1))
    md.append("")

    # --- requests to etcd ---
    reqs = []
    for key, label in (
            ("mount.read", "mount of the {:,}-key subtree".format(read_keys)),
            ("cat.cold", "`cat dir/*`, cold"), ("cat.warm", "`cat dir/*`, warm"),
            ("grep.cold", "`grep -r`, cold"), ("grep.warm", "`grep -r`, warm"),
            ("ls.cold", "`ls -l`, cold"), ("ls.warm", "`ls -l`, warm"),
            ("mem.{}".format(tree_keys),
             "mount of the {:,}-key tree".format(tree_keys)),
            ("find.cold", "`find`, cold"), ("find.warm", "`find`, warm"),
            ("stat.cold", "stat of {} keys, cold".format(
                params.get("cold_keys", "?"))),
            ("read.cold", "open/read/close of {} keys, cold".format(
                params.get("cold_keys", "?"))),
            ("stat.warm", "{} stats, warm".format(
                params.get("lat_iters", "?"))),
            ("read.warm", "{} open/read/close, warm".format(
                params.get("lat_iters", "?")))):
        v = rep.med(key, "etcdfs", "etcd_requests")
        if v is not None:
            reqs.append((label, "{:,.0f}".format(v)))
    for w in writers:
        v = rep.med("write.{}".format(w), "etcdfs", "etcd_requests")
        if v is not None:
            reqs.append(("per committed write, {} writer{}".format(
                w, "s" if w > 1 else ""), "{:.2f}".format(v)))
    for n in mem_keys:
        if n == tree_keys:
            continue
        v = rep.med("mem.{}".format(n), "etcdfs", "etcd_requests")
        if v is not None:
            reqs.append(("mount of the {:,}-key tree".format(n),
                         "{:,.0f}".format(v)))
    if reqs:
        md.append("## Requests to etcd")
        md.append("")
        md.append("KV requests (range, txn, put, delete) etcd served while "
                  "etcdfs did the work, from etcd's own metrics "
                  "(`grpc_server_handled_total`); the watch stream is "
                  "not counted.")
        md.append("")
        md.append("| on etcdfs | requests |")
        md.append("|---|---|")
        for label, v in reqs:
            md.append("| {} | {} |".format(label, v))
        md.append("")

    # --- targets ---
    md.append("## Targets")
    md.append("")
    md.append("| target | measured | |")
    md.append("|---|---|---|")
    for t in targets:
        md.append("| {} | {} | {} |".format(*t))
    md.append("")
    md.append("The plot (results.png) shows each comparison as etcdfs's "
              "cost ÷ the baseline's (times; for writes the baseline's "
              "rate ÷ etcdfs's; for memory peak RSS ÷ budget), on a log "
              "scale, with the target where there is one.")
    md.append("")

    with open(os.path.join(out, "results.md"), "w") as f:
        f.write("\n".join(md))
    with open(os.path.join(out, "plot.dat"), "w") as f:
        f.write("# label cost-ratio target\n")
        for label, r, target in plot:
            if r is None or math.isnan(r) or r <= 0:
                continue
            f.write('"{}" {:.4g} {}\n'.format(
                label, r, "?" if target is None else "{:.4g}".format(target)))
    return 0


if __name__ == "__main__":
    sys.exit(main())

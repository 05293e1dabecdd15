#!/usr/bin/env python3
"""Turn one scripts/bench run into the published report (stdlib only).

Input, a run directory written by scripts/bench and scripts/guest/bench.sh:
  meta.env    host facts and settings (key=value)
  guest.txt   guest facts (key=value)
  calib.txt   loop counts the guest picked
  scheds.tsv  schedulers compared, in order (NAME<TAB>COMMAND<TAB>GROUPS;
              GROUPS: the workload groups it ran, absent = all)
  ablations.tsv  ablation variants: a header line naming the columns, then a line each
  raw.tsv     a header line naming the columns (round sched workload
              metric value unit hib status note group), then one
              measurement per line
Output, in --out (default target/bench/report; scripts/bench --publish
passes docs/bench):
  results-<date>-<commit>.md, results-<date>-<commit>.svg, raw-<date>-<commit>.tsv, latest.md,
  latest.json

Every ratio is normalised so that > 1 means better than the default
scheduler: value/default when higher is better, default/value otherwise.

  report.py --run DIR [--out DIR]
  report.py --snippet docs/bench/latest.json   (headline numbers for README)
  report.py --snippet docs/bench/latest.json --check-readme README.md
      (exit 1 unless the README's bench block is that snippet)
  report.py --snippet docs/bench/latest.json --update-readme README.md
      (write the snippet into the README's bench block)
"""

import argparse
import difflib
import json
import math
import os
import re
import shutil
import statistics
import sys
from collections import OrderedDict, defaultdict

BASE = "default"
TWIN = "default-b"
# A row's noise is never taken below this: a difference under 1% is no claim
# on this host, and a row whose default reads the same every round (stress-ng
# x1 schedpolicy) would otherwise count a rounding step as beyond its noise.
NOISE_MIN = 0.01
COLORS = ["#8c8c8c", "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e",
          "#17becf", "#e377c2", "#bcbd22", "#7f7f7f", "#393b79", "#637939"]


def read_kv(path):
    out = {}
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                if "=" in line:
                    k, v = line.rstrip("\n").split("=", 1)
                    out[k] = v
    return out


def read_raw(path):
    """The measurements, by the column names of the file's header line
    (scripts/guest/bench.sh writes it beside the rows)."""
    rows = []
    with open(path) as f:
        cols = f.readline().rstrip("\n").split("\t")
        if cols[0] != "round":
            sys.exit(f"report.py: {path} has no header line (round<TAB>sched...)")
        for line in f:
            parts = line.rstrip("\n").split("\t")
            if len(parts) < len(cols) - 2:
                continue
            parts += [""] * (len(cols) - len(parts))
            rows.append(dict(zip(cols, parts)))
    return rows


def geomean(xs):
    xs = [x for x in xs if x and x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def fmt(v):
    if v is None:
        return "-"
    a = abs(v)
    if a >= 1000:
        return f"{v:,.0f}"
    if a >= 100:
        return f"{v:.0f}"
    if a >= 10:
        return f"{v:.1f}"
    return f"{v:.2f}" if a >= 1 else f"{v:.3g}"


class Report:
    def __init__(self, run):
        self.run = run
        self.meta = read_kv(os.path.join(run, "meta.env"))
        self.guest = read_kv(os.path.join(run, "guest.txt"))
        self.calib = read_kv(os.path.join(run, "calib.txt"))
        self.raw = read_raw(os.path.join(run, "raw.tsv"))
        self.scheds, self.sched_groups, self.sched_args = [], {}, {}
        with open(os.path.join(run, "scheds.tsv")) as f:
            for l in f:
                if not l.strip():
                    continue
                parts = l.rstrip("\n").split("\t")
                self.scheds.append(parts[0])
                # A --variants variant's flags: the command after the binary.
                self.sched_args[parts[0]] = " ".join(parts[1].split()[1:]) if len(parts) > 1 else ""
                # None: every group (older runs have no GROUPS column).
                self.sched_groups[parts[0]] = set(parts[2].split(",")) if len(parts) > 2 and parts[2] else None
        self.ablations = []  # [{name, switch, groups, why}]
        ab = os.path.join(run, "ablations.tsv")
        if os.path.exists(ab):
            with open(ab) as f:
                # The columns are named by the header scripts/bench writes.
                cols = f.readline().rstrip("\n").split("\t")
                if "name" not in cols:
                    sys.exit(f"report.py: {ab} has no header line naming its columns (an older run: rerun it)")
                for l in f:
                    a = dict(zip(cols, l.rstrip("\n").split("\t")))
                    if a.get("name") in self.scheds:
                        self.ablations.append(a)
        self.rounds = int(self.meta.get("rounds", "0") or 0)
        self.date = (self.meta.get("date") or "unknown")[:10]
        # Output files are named by date and commit, so that a second run on
        # the same day never overwrites the first (it did, twice).
        git = re.sub(r"[^0-9A-Za-z-]", "", self.meta.get("git") or "unknown")
        self.stem = f"{self.date}-{git}"
        self.raw_name = f"raw-{self.stem}.tsv"
        self._collect()

    def _collect(self):
        # rows: (workload, metric) -> {unit, hib, vals{sched:[..]}, fails{sched:[notes]}}
        self.rows = OrderedDict()
        self.missing = OrderedDict()  # stressor -> note
        self.failures = []
        self.bpf = defaultdict(lambda: defaultdict(lambda: defaultdict(lambda: [0, 0])))
        stress_workloads = []
        for r in self.raw:
            wl, metric, status = r["workload"], r["metric"], r["status"]
            if status == "missing":
                self.missing[metric] = r["note"]
                continue
            if wl.startswith("bpf "):
                # sched -> prog -> round -> [run_time_ns, run_cnt]
                name, _, kind = metric.rpartition(" ")
                cell = self.bpf[r["sched"]][name][r["round"]]
                cell[0 if kind == "run_time_ns" else 1] += float(r["value"])
                continue
            if metric == "(all metrics)":
                # The scheduler did not load for a whole group: its cells in
                # that group's rows stay empty and show as FAILED.
                self.failures.append(r)
                continue
            if wl.startswith("stress-ng x") and wl not in stress_workloads:
                stress_workloads.append(wl)
            row = self.rows.setdefault((wl, metric), {
                "unit": r["unit"], "hib": r["hib"] == "1", "group": "",
                "vals": defaultdict(list), "fails": defaultdict(list)})
            row["group"] = row["group"] or r.get("group", "")
            if status == "ok":
                try:
                    row["vals"][r["sched"]].append(float(r["value"]))
                except ValueError:
                    status = "FAILED"
            if status != "ok":
                row["fails"][r["sched"]].append(r["note"])
                self.failures.append(r)
        # A stressor this stress-ng lacks is a row of "missing" cells in
        # every stress-ng table it would have been part of.
        for wl in stress_workloads:
            for s in self.missing:
                self.rows[(wl, s)] = {"unit": "bogo-ops/s", "hib": True, "missing": True,
                                      "group": "", "vals": {}, "fails": {}}
        # Keep each workload's rows together (missing stressors were added last).
        order = []
        for wl, _ in self.rows:
            if wl not in order:
                order.append(wl)
        self.rows = OrderedDict(sorted(self.rows.items(), key=lambda kv: order.index(kv[0][0])))
        self.stress_workloads = stress_workloads
        self._cells()

    def ran(self, key, s):
        """Did scheduler s run the group of row key? (Ablation variants run
        a subset of the groups; a cell they did not run is "not run", not
        FAILED.)"""
        groups = self.sched_groups.get(s)
        g = self.rows[key].get("group") if key in self.rows else ""
        return groups is None or not g or g in groups

    def _cells(self):
        self.cells = {}
        for key, row in self.rows.items():
            if row.get("missing"):
                continue
            base = row["vals"].get(BASE)
            bmed = statistics.median(base) if base else None
            for s in self.scheds:
                v = row["vals"].get(s, [])
                c = {"n": len(v), "failed": len(row["fails"].get(s, [])),
                     "notes": sorted(set(row["fails"].get(s, []))), "ran": self.ran(key, s)}
                if v:
                    c.update(median=statistics.median(v), min=min(v), max=max(v))
                    if bmed:
                        ratio = c["median"] / bmed
                        c["ratio"] = ratio
                        c["better"] = ratio if row["hib"] else (1 / ratio if ratio else None)
                self.cells[(key, s)] = c
            # Noise of this row: how far default-b is from default, and the
            # relative half-spread of the default's own rounds.
            noise = 0.0
            tw = self.cells.get((key, TWIN), {})
            if tw.get("ratio"):
                noise = abs(tw["ratio"] - 1)
            if base and bmed:
                noise = max(noise, (max(base) - min(base)) / 2 / bmed)
            row["noise"] = max(noise, NOISE_MIN)
        # Derived rows: geometric mean of the stressors per stress workload,
        # over the stressors measured for both the scheduler and default.
        self.derived = OrderedDict()
        for wl in self.stress_workloads:
            keys = [k for k, r in self.rows.items() if k[0] == wl and not r.get("missing")]
            d = {}
            for s in self.scheds:
                common = [k for k in keys if "median" in self.cells.get((k, s), {})
                          and "median" in self.cells.get((k, BASE), {})]
                if not common:
                    d[s] = None if any(self.ran(k, s) for k in keys) else {"not_run": True}
                    continue
                g = geomean([self.cells[(k, s)]["median"] for k in common])
                gb = geomean([self.cells[(k, BASE)]["median"] for k in common])
                d[s] = {"geomean": g, "better": g / gb if gb else None, "stressors": len(common)}
            self.derived[wl] = d

    # ---- summaries ---------------------------------------------------------
    def noise_floor(self):
        devs = [abs(self.cells[(k, TWIN)]["ratio"] - 1) for k in self.rows
                if "ratio" in self.cells.get((k, TWIN), {})]
        if not devs:
            return None
        return {"median": statistics.median(devs), "max": max(devs), "metrics": len(devs)}

    def summary(self):
        out = {}
        for s in self.scheds:
            if s == BASE:
                continue
            b = [self.cells[(k, s)]["better"] for k in self.rows
                 if self.cells.get((k, s), {}).get("better")]
            failed = [k for k, r in self.rows.items()
                      if not r.get("missing") and self.ran(k, s) and not self.cells.get((k, s), {}).get("n")]
            # Against the default's second run as well: in every committed
            # run so far default-b read 5-14% above default, so either
            # baseline alone flatters or understates a scheduler.
            vb = [self.cells[(k, s)]["better"] / self.cells[(k, TWIN)]["better"] for k in self.rows
                  if s != TWIN and self.cells.get((k, s), {}).get("better")
                  and self.cells.get((k, TWIN), {}).get("better")]
            out[s] = {"geomean_better": geomean(b), "metrics": len(b), "failed": len(failed),
                      "wins": sum(1 for x in b if x > 1), "losses": sum(1 for x in b if x < 1),
                      "geomean_vs_twin": geomean(vb)}
        return out

    def contributions(self):
        """What each ablated fast path contributes: fastpath against the
        variant with that path switched the other way, on the metrics the
        variant ran. contribution > 1: the path makes things better (ratio
        of the normalised "better" values, path on / path off)."""
        out = OrderedDict()
        abl = self.ablations or [{"name": s, "switch": self.sched_args.get(s) or "?", "groups": "", "why": ""}
                                 for s in self.scheds if s.startswith("fastpath-")]
        for a in abl:
            v = a["name"]
            # fastpath-no-X has the path off; any other variant (e.g.
            # fastpath-idle-hold-50, a path that is off by default) has it on.
            on_is_variant = "-no-" not in v
            per = OrderedDict()
            for k, row in self.rows.items():
                if row.get("missing"):
                    continue
                cf, cv = self.cells.get((k, "fastpath"), {}), self.cells.get((k, v), {})
                if cf.get("better") and cv.get("better"):
                    c = cv["better"] / cf["better"] if on_is_variant else cf["better"] / cv["better"]
                    per[k] = {"contribution": c, "beyond_noise": abs(c - 1) > row.get("noise", 0)}
            stress = OrderedDict()
            for wl, d in self.derived.items():
                f, x = d.get("fastpath"), d.get(v)
                if f and x and f.get("better") and x.get("better"):
                    stress[wl] = x["better"] / f["better"] if on_is_variant else f["better"] / x["better"]
            cs = [p["contribution"] for p in per.values()]
            out[v] = {"switch": a["switch"], "groups": a["groups"], "why": a["why"],
                      "path_on_in": v if on_is_variant else "fastpath",
                      "geomean": geomean(cs), "metrics": len(cs),
                      "helps": sum(1 for p in per.values() if p["contribution"] > 1 and p["beyond_noise"]),
                      "hurts": sum(1 for p in per.values() if p["contribution"] < 1 and p["beyond_noise"]),
                      "stress_geomean": stress,
                      "per_metric": {f"{k[0]}: {k[1]}": p["contribution"] for k, p in per.items()},
                      "beyond_noise": [f"{k[0]}: {k[1]}" for k, p in per.items() if p["beyond_noise"]]}
        return out

    def bpf_table(self):
        out = OrderedDict()
        for s in self.scheds:
            if s not in self.bpf:
                continue
            progs = OrderedDict()
            for prog, per_round in sorted(self.bpf[s].items()):
                nsop = [t / c for t, c in per_round.values() if c > 0]
                calls = [c for _, c in per_round.values()]
                if nsop:
                    progs[prog] = {"ns_per_op": statistics.median(nsop), "min": min(nsop),
                                   "max": max(nsop), "calls_per_round": statistics.median(calls)}
            out[s] = progs
        return out

    # ---- markdown ------------------------------------------------------------
    def cell_md(self, key, s):
        row = self.rows[key]
        if row.get("missing"):
            return "missing"
        c = self.cells.get((key, s), {})
        if not c.get("n") and not c.get("ran", True):
            return "not run"
        if not c.get("n"):
            return "**FAILED**"
        txt = f"{fmt(c['median'])} ({fmt(c['min'])}–{fmt(c['max'])})"
        if s != BASE and c.get("better"):
            mark = "≈" if abs(c["better"] - 1) <= row["noise"] else ""
            txt += f" {mark}**{c['better']:.2f}×**" if not mark else f" {mark}{c['better']:.2f}×"
        if c["failed"]:
            txt += f" ({c['failed']}/{c['failed'] + c['n']} FAILED)"
        return txt

    def markdown(self, svg_name):
        m, g = self.meta, self.guest
        mem = g.get("memory_kib")
        mem_s = f"{int(mem) / 1048576:.1f} GiB" if mem else m.get("guest_memory", "?")
        nf = self.noise_floor()
        L = []
        quick = m.get("quick") == "1"
        L.append(f"# scx_fastpath benchmark results, {self.date}")
        L.append("")
        if quick:
            L.append("> **Development run (`--quick`): short durations; the numbers are noise.**")
            L.append("")
        L.append(f"- Command: `{m.get('command', '?')}` (git `{m.get('git', '?')}`)")
        L.append(f"- Date: {m.get('date', '?')}; wall time {int(m.get('wall_s', 0) or 0) // 60} min")
        L.append(f"- Guest: kernel {g.get('kernel', '?')}, {g.get('vcpus', m.get('guest_cpus', '?'))} vCPUs, "
                 f"{mem_s} memory, QEMU {m.get('qemu', '?')} ({m.get('accel', 'tcg')}, emulated)")
        L.append(f"- Host: {m.get('host_cpu', '?')}, {m.get('host_cores', '?')} cores")
        L.append(f"- Rounds: {m.get('rounds')}; {m.get('duration')} s per workload run, "
                 f"{m.get('stress_duration')} s per stress-ng stressor"
                 + (f" ({m['scaled']})" if m.get("scaled") else "")
                 + (f"; estimate was {int(m['estimate_s']) / 60:.0f} min" if m.get("estimate_s") else ""))
        L.append(f"- Loop counts (calibrated in the guest to the duration): "
                 + (", ".join(f"{k}={v}" for k, v in self.calib.items()) or "none"))
        L.append(f"- Schedulers: " + ", ".join(f"`{s}`" for s in self.scheds)
                 + ". `default` is the kernel's own scheduler (EEVDF, no sched_ext scheduler loaded); "
                 "`default-b` is the same, measured a second time each round to show the noise.")
        L.append("- BPF run-time accounting (`kernel.bpf_stats_enabled`): "
                 + ("on (`--bpf-stats`): every BPF call pays two clock reads, so the BPF schedulers' "
                    "throughput reads low; see *BPF cost per call*" if m.get("bpf_stats") == "1"
                    else "off: throughput as users run it (no BPF cost table; `--bpf-stats` adds one)"))
        if m.get("skipped_peers"):
            L.append(f"- Peers not installed, skipped: {m['skipped_peers']}")
        if m.get("left_out_peers"):
            L.append(f"- Peers left out of this run (`--skip-peers`): {m['left_out_peers']}")
        if m.get("guest_exit", "0") != "0":
            L.append(f"- **The guest run exited {m['guest_exit']}: runs after that point are missing "
                     "and show as FAILED.**")
        if self.missing:
            L.append(f"- stress-ng stressors missing from this stress-ng ({g.get('stress_ng', '?')}): "
                     + ", ".join(self.missing) + " (shown as `missing`)")
        L.append("")
        L.append("Method: one guest; every scheduler is loaded (sched_ext state `enabled` checked), runs one "
                 f"block of workload groups ({m.get('blocks', '?').replace(' ', '; ')}; an ablation variant only "
                 "the groups it runs) and is stopped with "
                 "SIGINT (state `disabled` checked); all schedulers run a block back to back before the next "
                 "block, and their order rotates every round. Cells: median over rounds "
                 "(min–max), then the ratio to `default`, **normalised so that > 1 is better than default** "
                 "(value/default for higher-is-better metrics, default/value for lower-is-better). "
                 "`≈` marks a ratio within that row's noise (the largest of |default-b/default − 1|, "
                 "half the default's own min–max spread and 1%); bold ratios are outside it.")
        L.append("")
        if m.get("stress_mode") == "sequential":
            L.append("stress-ng: for each instance count, one stress-ng process runs the stressors **one after "
                     "another** (`--sequential N`, every other stressor excluded), each for the stressor duration "
                     "above; they never run at the same time, so each bogo-ops/s is that stressor alone. The "
                     "*geomean of stressors* row is the geometric mean of the per-stressor medians.")
        else:
            L.append("stress-ng: one stress-ng process per stressor and instance count, each for the stressor "
                     "duration above. The *geomean of stressors* row is the geometric mean of the per-stressor "
                     "medians.")
        L.append("")
        if self.ablations:
            full = self.meta.get("full_ablations") == "1"
            L.append("Ablations: `default`, `default-b` and `fastpath` run every workload. "
                     + ("Each ablation variant ran every workload too (`--full-ablations`)."
                        if full else
                        "Each ablation variant (one fast path switched the other way) runs only both stress-ng "
                        "groups and the workloads that exercise its path; its other cells read `not run`, and "
                        "its summary geomean is over those metrics only, so compare it with `fastpath` in "
                        "*Fast path contributions*, not with the other rows of the summary:"))
            L.append("")
            L.append("| variant | switch | workload groups run | why these |")
            L.append("|---|---|---|---|")
            for a in self.ablations:
                L.append(f"| `{a['name']}` | `{a['switch']}` | {a['groups'].replace(',', ', ')} | {a['why']} |")
            L.append("")
        if nf:
            L.append(f"**Noise floor:** default-b vs default differs by a median {nf['median'] * 100:.1f}% "
                     f"(max {nf['max'] * 100:.1f}%) over {nf['metrics']} metrics. Differences smaller than "
                     f"about {nf['median'] * 100:.0f}% cannot be told apart from noise by this run; per row, "
                     "see the `≈` marks.")
        else:
            L.append("**Noise floor:** not available (default-b was not measured).")
        L.append("")
        L.append("## Summary")
        L.append("")
        L.append("Geometric mean of the normalised ratios over every metric measured for both (> 1 = better "
                 "than default; stress-ng stressors count individually):")
        L.append("")
        L.append(f"| scheduler | geomean vs default | geomean vs {TWIN} | better / worse metrics | FAILED metrics |")
        L.append("|---|---|---|---|---|")
        for s, v in self.summary().items():
            gm = f"{v['geomean_better']:.3f}×" if v["geomean_better"] else "-"
            gb = f"{v['geomean_vs_twin']:.3f}×" if v.get("geomean_vs_twin") else "-"
            L.append(f"| {s} | {gm} | {gb} | {v['wins']} / {v['losses']} of {v['metrics']} | {v['failed']} |")
        L.append("")
        L.append(f"![ratios to default]({svg_name})")
        L.append("")
        contrib = self.contributions()
        if contrib:
            L.append("## Fast path contributions")
            L.append("")
            L.append("Each fast path, switched the other way: `fastpath` against the variant, on the metrics the "
                     "variant ran; per metric the ratio of the two normalised ratios (path on / path off), so "
                     "**> 1 means the fast path makes that metric better**. Geomean over those metrics; "
                     "helps / hurts count metrics whose ratio is outside the row's noise (the `≈` rule "
                     "of the results table). The variant and `fastpath` run in the same blocks, "
                     "interleaved, like every other comparison here.")
            L.append("")
            L.append("| fast path (variant) | switch | metrics | geomean contribution | helps / hurts | "
                     "stress-ng geomeans | other metrics |")
            L.append("|---|---|---|---|---|---|---|")
            for v, c in contrib.items():
                gm = f"**{c['geomean']:.3f}×**" if c["geomean"] else "-"
                sg = ", ".join(f"{wl} {x:.2f}×" for wl, x in c["stress_geomean"].items()) or "-"
                other = ", ".join(f"{k} {x:.2f}×" for k, x in c["per_metric"].items()
                                  if not k.startswith("stress-ng")) or "-"
                on = "" if c["path_on_in"] == "fastpath" else " (path on in the variant)"
                L.append(f"| `{v}`{on} | `{c['switch']}` | {c['metrics']} | {gm} | {c['helps']} / {c['hurts']} "
                         f"| {sg} | {other} |")
            L.append("")
        L.append("## Results")
        L.append("")
        L.append("| workload | metric | " + " | ".join(self.scheds) + " |")
        L.append("|---|---|" + "---|" * len(self.scheds))
        last_wl = None
        for key, row in self.rows.items():
            wl, metric = key
            if last_wl is not None and last_wl in self.derived and wl != last_wl:
                L.append(self.derived_md(last_wl))
            last_wl = wl
            unit = "" if row.get("missing") else f" ({row['unit']}, {'higher' if row['hib'] else 'lower'} is better)"
            L.append(f"| {wl} | {metric}{unit} | " + " | ".join(self.cell_md(key, s) for s in self.scheds) + " |")
        if last_wl in self.derived:
            L.append(self.derived_md(last_wl))
        L.append("")
        bt = self.bpf_table()
        if bt:
            L.append("## BPF cost per call")
            L.append("")
            L.append("With `kernel.bpf_stats_enabled=1` (on for every BPF scheduler's runs alike; it adds two "
                     "clock reads per call): run_time_ns / run_cnt of each struct_ops program of the scheduler, "
                     "summed over all workload groups of a round; median (min–max) over rounds. Emulated "
                     "guest: absolute ns are inflated, compare between schedulers. Ablation variants run "
                     "fewer workload groups, so their calls per round are not comparable, and their ns per "
                     "call come from a different mix of workloads.")
            L.append("")
            L.append("| scheduler | program | ns per call | calls per round |")
            L.append("|---|---|---|---|")
            for s, progs in bt.items():
                for p, v in progs.items():
                    L.append(f"| {s} | `{p}` | {fmt(v['ns_per_op'])} ({fmt(v['min'])}–{fmt(v['max'])}) "
                             f"| {v['calls_per_round']:,.0f} |")
            L.append("")
        L.append("## Failures")
        L.append("")
        # Cells without any value and without a recorded failure: the run
        # never happened (the guest stopped early).
        no_load = {r["sched"] for r in self.failures if r["metric"] == "(all metrics)"}
        silent = [(k, s) for k, r in self.rows.items() if not r.get("missing") for s in self.scheds
                  if s not in no_load and self.ran(k, s) and not self.cells.get((k, s), {}).get("n")
                  and not r["fails"].get(s)]
        if self.failures or silent:
            L.append("| round | scheduler | workload | metric | why |")
            L.append("|---|---|---|---|---|")
            for r in self.failures:
                L.append(f"| {r['round']} | {r['sched']} | {r['workload']} | {r['metric']} | {r['note']} |")
            for (wl, metric), s in silent:
                L.append(f"| - | {s} | {wl} | {metric} | no measurement recorded "
                         "(scheduler did not load, or the guest stopped first) |")
        else:
            L.append("None: every workload run produced a value.")
        L.append("")
        L.append(f"Raw data: [{self.raw_name}]({self.raw_name}) (one line per measurement). "
                 "Regenerate this page with `scripts/bench --report target/bench/<run>`.")
        L.append("")
        return "\n".join(L)

    def derived_md(self, wl):
        d = self.derived[wl]
        cells = []
        for s in self.scheds:
            v = d.get(s)
            if v and v.get("not_run"):
                cells.append("not run")
                continue
            if not v:
                cells.append("**FAILED**")
                continue
            t = f"{fmt(v['geomean'])} ({v['stressors']} stressors)"
            if s != BASE and v.get("better"):
                t += f" **{v['better']:.2f}×**"
            cells.append(t)
        return f"| {wl} | *geomean of stressors* (bogo-ops/s) | " + " | ".join(cells) + " |"

    # ---- svg -----------------------------------------------------------------
    def svg(self):
        """Grouped horizontal bars of the normalised ratio per metric, log2
        scale clipped to [1/4, 4], one colour per scheduler, line at 1.0."""
        others = [s for s in self.scheds if s != BASE]
        keys = [k for k, r in self.rows.items() if not r.get("missing")]
        bar, gap, label_w, plot_w, top = 9, 10, 300, 520, 60
        lo, hi = math.log2(0.25), math.log2(4)
        x_of = lambda r: label_w + (min(max(math.log2(r), lo), hi) - lo) / (hi - lo) * plot_w
        group_h = bar * len(others) + gap
        height = top + group_h * len(keys) + 30 + 18 * len(others)
        width = label_w + plot_w + 40
        esc = lambda s: s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
        o = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'font-family="sans-serif" font-size="11">',
             f'<rect width="{width}" height="{height}" fill="white"/>',
             f'<text x="10" y="18" font-size="14" font-weight="bold">scx_fastpath benchmark {esc(self.date)}: '
             'ratio to default (EEVDF), &gt; 1 = better</text>',
             f'<text x="10" y="34" fill="#555">median of {self.rounds} rounds, log scale clipped to 0.25–4; '
             'default-b = default measured again (noise)</text>']
        for t in (0.25, 0.5, 1, 2, 4):
            x = x_of(t)
            o.append(f'<line x1="{x:.1f}" y1="{top - 8}" x2="{x:.1f}" y2="{top + group_h * len(keys)}" '
                     f'stroke="{"#000" if t == 1 else "#ddd"}" stroke-width="{1.5 if t == 1 else 1}"/>')
            o.append(f'<text x="{x:.1f}" y="{top - 12}" text-anchor="middle">{t:g}</text>')
        for i, key in enumerate(keys):
            y0 = top + i * group_h
            o.append(f'<text x="{label_w - 6}" y="{y0 + group_h / 2}" text-anchor="end">'
                     f'{esc(key[0] + ": " + key[1])[:48]}</text>')
            for j, s in enumerate(others):
                c = self.cells.get((key, s), {})
                y = y0 + j * bar
                color = COLORS[(self.scheds.index(s)) % len(COLORS)]
                if not c.get("n") and not c.get("ran", True):
                    continue
                if not c.get("n") or not c.get("better"):
                    o.append(f'<text x="{x_of(1) + 3:.1f}" y="{y + bar - 1}" fill="{color}" font-size="9">'
                             f'{"FAILED" if not c.get("n") else "n/a"} ({esc(s)})</text>')
                    continue
                x1, x2 = sorted((x_of(1), x_of(c["better"])))
                o.append(f'<rect x="{x1:.1f}" y="{y}" width="{max(x2 - x1, 1):.1f}" height="{bar - 1}" '
                         f'fill="{color}"><title>{esc(s)}: {c["better"]:.3f}</title></rect>')
        ly = top + group_h * len(keys) + 20
        for j, s in enumerate(others):
            color = COLORS[(self.scheds.index(s)) % len(COLORS)]
            o.append(f'<rect x="{label_w}" y="{ly + j * 18 - 9}" width="12" height="10" fill="{color}"/>')
            o.append(f'<text x="{label_w + 18}" y="{ly + j * 18}">{esc(s)}</text>')
        o.append("</svg>")
        return "\n".join(o) + "\n"

    # ---- json ----------------------------------------------------------------
    def json(self):
        rows = []
        for key, row in self.rows.items():
            ent = {"workload": key[0], "metric": key[1], "unit": row["unit"],
                   "higher_is_better": row["hib"], "missing": bool(row.get("missing")),
                   "noise": row.get("noise"), "cells": {}}
            for s in self.scheds:
                c = self.cells.get((key, s))
                if c is not None:
                    ent["cells"][s] = {k: c.get(k) for k in
                                       ("median", "min", "max", "n", "failed", "ratio", "better")}
                    ent["cells"][s]["status"] = ("ok" if c.get("n") else
                                                 "FAILED" if c.get("ran", True) else "not run")
            rows.append(ent)
        return {"date": self.date, "meta": self.meta, "guest": self.guest, "calibration": self.calib,
                "schedulers": self.scheds, "baseline": BASE,
                "ratio_note": "better = normalised ratio to default, > 1 is better than default",
                "noise_floor": self.noise_floor(), "summary": self.summary(),
                "stress_geomean": self.derived, "missing_stressors": list(self.missing),
                "ablations": self.ablations, "contributions": self.contributions(),
                "bpf_ns_per_call": self.bpf_table(), "rows": rows,
                "failures": self.failures}

    def write(self, out):
        os.makedirs(out, exist_ok=True)
        base = f"results-{self.stem}"
        md = self.markdown(base + ".svg")
        with open(os.path.join(out, base + ".md"), "w") as f:
            f.write(md)
        with open(os.path.join(out, base + ".svg"), "w") as f:
            f.write(self.svg())
        shutil.copyfile(os.path.join(self.run, "raw.tsv"), os.path.join(out, self.raw_name))
        # latest.md sits beside results-<date>-<commit>.svg, so the image link holds.
        shutil.copyfile(os.path.join(out, base + ".md"), os.path.join(out, "latest.md"))
        with open(os.path.join(out, "latest.json"), "w") as f:
            json.dump(self.json(), f, indent=1, sort_keys=False)
            f.write("\n")
        return [os.path.join(out, n) for n in
                (base + ".md", base + ".svg", self.raw_name, "latest.md", "latest.json")]


def snippet(path):
    """Headline numbers for the README, straight from latest.json: the text
    of the README's bench block."""
    out = []
    with open(path) as f:
        j = json.load(f)
    g, m, nf = j["guest"], j["meta"], j.get("noise_floor")
    out.append(f"Benchmarks ({j['date']}, {g.get('vcpus')}-vCPU QEMU TCG guest, kernel {g.get('kernel')}, "
          f"{m.get('rounds')} rounds, {m.get('duration')} s per workload, {m.get('stress_duration')} s per stress-ng "
          f"stressor; full tables: {os.path.join(os.path.dirname(path), 'latest.md')}). "
          "Ratios are to the default scheduler (EEVDF); > 1 is better.")
    out.append("")
    if nf:
        out.append(f"- Noise floor (default vs itself): median {nf['median'] * 100:.1f}%, "
              f"max {nf['max'] * 100:.1f}%")
    if m.get("left_out_peers"):
        out.append(f"- Peers left out of this run (`--skip-peers`): {m['left_out_peers']}")
    contrib = j.get("contributions") or {}
    for s, v in j["summary"].items():
        # Ablation variants are the README's other block, not headline lines.
        if s == "default-b" or s in contrib:
            continue
        gm = f"{v['geomean_better']:.3f}×" if v["geomean_better"] else "n/a"
        gb = f"; against `{TWIN}` {v['geomean_vs_twin']:.3f}×" if v.get("geomean_vs_twin") else ""
        out.append(f"- {s}: geomean {gm} over {v['metrics']} metrics "
              f"({v['wins']} better, {v['losses']} worse, {v['failed']} failed{gb})")
    # fastpath's rows outside their noise, best and worst first; the
    # full per-row table is in latest.md.
    fp = "fastpath"
    better, worse, failed = [], [], []
    for r in j["rows"]:
        c = r["cells"].get(fp, {})
        if r["missing"]:
            continue
        if not c.get("better"):
            failed.append(f"{r['workload']} {r['metric']}")
        elif abs(c["better"] - 1) > (r.get("noise") or 0):
            (better if c["better"] > 1 else worse).append((c["better"], f"{r['workload']} {r['metric']}"))
    for name, rows in (("better than the default", sorted(better, reverse=True)),
                       ("worse than the default", sorted(worse))):
        out.append(f"- {fp} {name} beyond the row's noise ({len(rows)}): "
                   + (", ".join(f"{k} {x:.2f}×" for x, k in rows) or "none"))
    if failed:
        out.append(f"- {fp} FAILED: " + ", ".join(failed))
    return "".join(line + "\n" for line in out)


def ablation_snippet(path):
    """What each mechanism buys, from the published ablation run's
    latest.json: the text of the README's ablations block."""
    out = []
    with open(path) as f:
        j = json.load(f)
    g, m, nf = j["guest"], j["meta"], j.get("noise_floor")
    contrib = j.get("contributions") or {}
    if not contrib:
        sys.exit(f"report.py: {path} is a run without ablation variants")
    fp = j["summary"].get("fastpath", {})
    gm = f"{fp['geomean_better']:.3f}×" if fp.get("geomean_better") else "n/a"
    out.append(f"Ablation run ({j['date']}, {g.get('vcpus')}-vCPU QEMU TCG guest, {m.get('rounds')} rounds, "
               f"{m.get('duration')} s per workload, {m.get('stress_duration')} s per stress-ng stressor; "
               f"full tables: {os.path.join(os.path.dirname(path), 'latest.md')}): `fastpath` against a "
               "variant with that one mechanism switched the other way, on the workloads that exercise "
               "it; > 1 = the mechanism helps. Helps / hurts count metrics outside their row's noise; "
               "the largest effects are among those.")
    out.append("")
    if nf:
        out.append(f"- Noise floor (default vs itself): median {nf['median'] * 100:.1f}%, "
                   f"max {nf['max'] * 100:.1f}%; fastpath in this run: {gm} of the default")
        out.append("")
    out.append("| mechanism (variant's switch) | contribution | helps / hurts | largest effects |")
    out.append("|---|---|---|---|")
    for v, c in contrib.items():
        if not c.get("metrics"):
            out.append(f"| `{c.get('switch')}` | did not run (see the full tables) | - | - |")
            continue
        gm = f"{c['geomean']:.3f}× over {c.get('metrics')}" if c.get("geomean") else "n/a"
        pm = c.get("per_metric") or {}
        big = sorted((k for k in c.get("beyond_noise") or [] if k in pm),
                     key=lambda k: -abs(math.log(pm[k])))[:3]
        eff = ", ".join(f"{k} {pm[k]:.2f}×" for k in big) or "none beyond noise"
        on = " (on in the variant)" if c.get("path_on_in") not in (None, "fastpath") else ""
        out.append(f"| `{c.get('switch')}`{on} | {gm} | {c.get('helps')} / {c.get('hurts')} | {eff} |")
    return "".join(line + "\n" for line in out)


# The README's two generated blocks: the lines between each pair of marker
# lines, and the function that makes their text from a latest.json.
BLOCKS = {
    "headline": ("<!-- bench-snippet: output of scripts/bench --readme-snippet -->\n",
                 "<!-- /bench-snippet -->", snippet),
    "ablations": ("<!-- ablations-snippet: output of scripts/bench --readme-ablations -->\n",
                  "<!-- /ablations-snippet -->", ablation_snippet),
}


def readme_block(text, readme, kind):
    """(start, end) of block `kind`'s text in README text `text`."""
    opening, closing, _ = BLOCKS[kind]
    start = text.find(opening)
    if start < 0:
        sys.exit(f"report.py: {readme} has no line {opening.strip()!r}")
    start += len(opening)
    end = text.find(closing, start)
    if end < 0:
        sys.exit(f"report.py: {readme}'s {kind} block is not closed by {closing!r}")
    return start, end


def check_readme(readme, latest, kind):
    """0 if the README's block `kind` is the snippet of `latest`, else 1 with a diff."""
    with open(readme) as f:
        text = f.read()
    start, end = readme_block(text, readme, kind)
    want = BLOCKS[kind][2](latest)
    if text[start:end] == want:
        print(f"report: {readme}'s {kind} block is the snippet of {latest}")
        return 0
    diff = difflib.unified_diff(text[start:end].splitlines(True), want.splitlines(True),
                                f"{readme} ({kind} block)", f"snippet of {latest}")
    sys.stderr.writelines(diff)
    print(f"report: {readme}'s {kind} block differs from the snippet of {latest}: "
          f"scripts/bench --update-readme writes it", file=sys.stderr)
    return 1


def update_readme(readme, latest, kind):
    """Write the snippet of `latest` into the README's block `kind`."""
    with open(readme) as f:
        text = f.read()
    start, end = readme_block(text, readme, kind)
    with open(readme, "w") as f:
        f.write(text[:start] + BLOCKS[kind][2](latest) + text[end:])
    print(f"report: wrote the snippet of {latest} into {readme}'s {kind} block")
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--run", help="run directory (target/bench/<stamp>)")
    ap.add_argument("--out", default="target/bench/report")
    ap.add_argument("--snippet", metavar="LATEST_JSON")
    ap.add_argument("--kind", choices=sorted(BLOCKS), default="headline",
                    help="with --snippet: which README block (headline: the benchmark block; "
                         "ablations: what each mechanism buys)")
    ap.add_argument("--check-readme", metavar="README", help="with --snippet: exit 1 unless README's block is the snippet")
    ap.add_argument("--update-readme", metavar="README", help="with --snippet: write the snippet into README's block")
    a = ap.parse_args()
    if (a.check_readme or a.update_readme) and not a.snippet:
        ap.error("--check-readme and --update-readme need --snippet LATEST_JSON")
    if a.check_readme:
        return check_readme(a.check_readme, a.snippet, a.kind)
    if a.update_readme:
        return update_readme(a.update_readme, a.snippet, a.kind)
    if a.snippet:
        sys.stdout.write(BLOCKS[a.kind][2](a.snippet))
        return 0
    if not a.run:
        ap.error("--run or --snippet is required")
    rep = Report(a.run)
    for p in rep.write(a.out):
        print(f"report: wrote {p}")
    nf = rep.noise_floor()
    if nf:
        print(f"report: noise floor (default-b vs default): median {nf['median'] * 100:.1f}%, "
              f"max {nf['max'] * 100:.1f}%")
    for s, v in rep.summary().items():
        gm = f"{v['geomean_better']:.3f}x" if v["geomean_better"] else "n/a"
        print(f"report: {s}: geomean vs default {gm} over {v['metrics']} metrics, {v['failed']} FAILED")
    return 0


if __name__ == "__main__":
    sys.exit(main())

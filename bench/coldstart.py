"""Cold start, a stage of bench/bench.py: the first tool call after launch, with the model file
out of the page cache, per packing, load method and storage speed; each packing's accuracy beside.

Per model:
  packings  the source file; for each uniform type that fits the model's rows (Q3_K and Q4_K
            where every row holds whole 256-weight super-blocks, else Q4_0), that type everywhere
            (`pack --uniform`) and the importance-aware packing of the same size (`pack
            --budget-mib`), calibrated on one Debian license text (GPL-3).
  accuracy  BFCL correctness (schemaweaver mode, the suite's sample), and perplexity, KL divergence
            and top-1 agreement against the source (`quality`) on an evaluation corpus of other
            Debian texts (license texts and manual pages; the calibration text is not in it).
  cold      for each storage speed (as it is, then capped by the block-I/O cgroup controller) and
            each arm (packing x load: llama.cpp's default mmap, a full read without mmap, the
            pipelined load), repeated and interleaved: evict the model file from the page cache
            (bench/pagecache: posix_fadvise DONTNEED, checked with mincore), run `call` on a
            fixed agent request, take the times to the first token and to the executable call
            from the command's start.
"""
import hashlib
import json
import os
import subprocess
import time
from pathlib import Path

from benchlib import CACHE, CLI, ROOT, bfcl_command, fmt, geomean, log, read_lines, run, svg_lines, table

PAGECACHE = ROOT / "build" / "bench" / "pagecache"
CALIBRATION = Path("/usr/share/common-licenses/GPL-3")
CORPUS_LICENSES = ["Apache-2.0", "MPL-2.0", "Artistic", "GFDL-1.3", "LGPL-2.1"]
CORPUS_MANUALS = ["tar", "grep", "find"]
CALIBRATION_TOKENS = 4096
LOADS = {"mmap": [], "no-mmap": ["--no-mmap"], "stream": ["--stream-weights"]}
# "+state": the prompt's keys and values restored from a file saved by an earlier run
# (`call --prompt-state`), so only the user's message is computed.
ARM_LOADS = ["mmap", "no-mmap", "stream", "mmap+state", "stream+state"]
BASELINE = ("source", "mmap")  # llama.cpp's default load of the file as shipped


def corpus():
    """The evaluation text: Debian license texts and manual pages (rendered as plain text)."""
    path = CACHE / "corpus" / "debian-eval.txt"
    if not path.exists():
        parts = [Path("/usr/share/common-licenses", name).read_text() for name in CORPUS_LICENSES]
        env = dict(os.environ, MANWIDTH="80")
        for page in CORPUS_MANUALS:
            manual = subprocess.run(["man", "-E", "ascii", "-P", "cat", page], capture_output=True, text=True, env=env)
            if manual.returncode == 0:
                plain = subprocess.run(["col", "-bx"], input=manual.stdout, capture_output=True, text=True).stdout
                parts.append(plain)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n\n".join(parts))
    return path


def corpus_digest():
    return hashlib.sha256(corpus().read_bytes()).hexdigest()[:16]


# ---------------------------------------------------------------- storage


def disk_of(path):
    """'major:minor' of the whole disk holding `path` (the throttle applies to disks)."""
    dev = os.stat(path).st_dev
    node = Path(f"/sys/dev/block/{os.major(dev)}:{os.minor(dev)}")
    if (node / "partition").exists():
        return (node.resolve().parent / "dev").read_text().strip()
    return f"{os.major(dev)}:{os.minor(dev)}"


class Storage:
    """Caps the read rate of the processes it starts from the model's disk: a block-I/O cgroup
    (v1 blkio.throttle or v2 io.max) that each measured command joins before it runs."""

    def __init__(self, model):
        self.device = disk_of(model)
        v1 = Path("/sys/fs/cgroup/blkio")
        v2 = Path("/sys/fs/cgroup")
        self.group = None
        try:
            if (v1 / "blkio.throttle.read_bps_device").exists():
                self.group, self.knob = v1 / "schemaweaver-bench", "blkio.throttle.read_bps_device"
            elif "io" in (v2 / "cgroup.subtree_control").read_text().split():
                self.group, self.knob = v2 / "schemaweaver-bench", "io.max"
            if self.group:
                self.group.mkdir(exist_ok=True)
        except OSError as e:
            log(f"no block-I/O cgroup ({e}): storage is measured as it is only")
            self.group = None

    def available(self):
        return self.group is not None

    def cap(self, mb_per_s):
        """None: as fast as the disk reads."""
        if not self.group:
            return
        rate = int(mb_per_s * 1e6) if mb_per_s else 0
        if self.knob == "io.max":
            setting = f"{self.device} rbps={rate or 'max'}"
        else:
            setting = f"{self.device} {rate}"
        (self.group / self.knob).write_text(setting + "\n")

    def join(self):
        """Runs in the child before exec: the command reads under the cap."""
        if self.group:
            (self.group / "cgroup.procs").write_text(str(os.getpid()))


def evict(path):
    subprocess.run([str(PAGECACHE), "evict", str(path)], check=True)


def read_speed(storage, path):
    """MB/s of reading the evicted file whole, under the current cap."""
    evict(path)
    start = time.monotonic()
    subprocess.run(["cat", str(path)], stdout=subprocess.DEVNULL, check=True, preexec_fn=storage.join)
    return os.path.getsize(path) / (time.monotonic() - start) / 1e6


# ---------------------------------------------------------------- stage


def pack(model, label, how, out, sensitivity_tokens):
    """The packed file for `label` (made once; its report kept in `out`), or None if the
    packing's type does not fit the model's rows."""
    key = label.replace("@", "-at-")
    path = CACHE / "packed" / f"{model.stem}-{key}.gguf"
    report = out / f"pack-{model.stem}-{key}.json"
    allocation = report.with_suffix(".md")  # the allocation table `pack` prints
    if path.exists() and report.exists() and allocation.exists():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    command = [CLI, "pack", "-m", model, "--calibration", CALIBRATION, "--tokens", CALIBRATION_TOKENS,
               "--sensitivity-tokens", sensitivity_tokens, "-o", path, "--json", report] + how
    log(" ".join(str(c) for c in command))
    result = subprocess.run([str(c) for c in command], capture_output=True, text=True)
    if result.returncode != 0 and "does not fit" in result.stderr:
        return None
    if result.returncode != 0:
        raise RuntimeError(f"pack failed: {result.stderr}")
    allocation.write_text(result.stdout)
    return path


def packings(cfg, model, out):
    """label -> GGUF file: the source, then per uniform type that type everywhere and the
    importance-aware packing of its size. The types: Q3_K and Q4_K where every row holds whole
    256-weight super-blocks, else Q4_0."""
    files = {"source": model}
    for utypes in (["Q3_K", "Q4_K"], ["Q4_0"]):
        for utype in utypes:
            uniform = pack(model, f"uniform-{utype}", ["--uniform", utype], out, cfg.sensitivity_tokens)
            if uniform is None:
                break
            size = json.loads((out / f"pack-{model.stem}-uniform-{utype}.json").read_text())["packed_bytes"]
            files[f"uniform-{utype}"] = uniform
            files[f"importance@{utype}"] = pack(model, f"importance@{utype}", ["--budget-mib", f"{size / 2**20:.3f}"],
                                                out, cfg.sensitivity_tokens)
        if len(files) > 1:
            return files
    return files


def source_bfcl(model, out):
    """The source's BFCL summary of the schemaweaver mode from the modes stage, if it ran."""
    path = out / f"modes-{model.stem}.summary.json"
    if path.exists():
        for mode in json.loads(path.read_text())["modes"]:
            if mode["mode"] == "schemaweaver":
                return mode
    return None


def measure_accuracy(cfg, model, files, out):
    """BFCL correctness of the source and the importance-aware packings (a uniform packing is
    compared on perplexity and KL: a BFCL run of the largest model takes most of an hour);
    perplexity and KL of every packing against the source."""
    for label, path in files.items():
        key = label.replace("@", "-at-")
        stem = out / f"cold-bfcl-{model.stem}-{key}"
        wanted = label.startswith("importance@") or (label == "source" and not source_bfcl(model, out))
        if wanted and not Path(f"{stem}.summary.json").exists():
            run(bfcl_command(path, cfg.sample, "schemaweaver", f"{stem}.jsonl", f"{stem}.summary.json", seed=1,
                             repeat=1, warmup=0) + ["--resume"], stdout=subprocess.DEVNULL)
        quality = out / f"cold-quality-{model.stem}-{key}.json"
        if label != "source" and not quality.exists():
            run([CLI, "quality", "-m", path, "--reference", model, "--text", corpus(), "--tokens", cfg.corpus_tokens,
                 "--json", quality], stdout=subprocess.DEVNULL)


def cold_arms(files):
    """(packing, load) pairs timed cold: every load of the source; the importance-aware
    packings with the default and the pipelined load, and the pipelined load with the prompt
    state (a uniform packing of the same size reads the same bytes, so only its accuracy is
    measured)."""
    arms = [("source", load) for load in ARM_LOADS]
    arms += [(label, load) for label in files if label.startswith("importance@")
             for load in ("mmap", "stream", "stream+state")]
    return arms


def state_file(model_file):
    return CACHE / "packed" / f"{Path(model_file).stem}.prompt-state"


def call_command(model_file, load, request):
    """The measured command: one call on the fixed request with the arm's load."""
    flags = LOADS[load.removesuffix("+state")]
    if load.endswith("+state"):
        flags = flags + ["--prompt-state", state_file(model_file)]
    return [str(c) for c in [CLI, "call", "-m", model_file, "--tools", request["tools"], "-p", request["prompt"],
                             "--json"] + flags]


def warm_up(files, arms, request):
    """Per packing, one untimed run: it measures the pass-cost curve the padding uses (cached
    per model) and saves the prompt state the +state arms restore."""
    for packing in sorted({p for p, _ in arms}):
        state_file(files[packing]).unlink(missing_ok=True)
        command = call_command(files[packing], "mmap+state", request)
        log(" ".join(command))
        # Exit code 1: no valid call, but the state is saved all the same.
        if subprocess.run(command, capture_output=True).returncode not in (0, 1):
            raise RuntimeError("the warm-up call failed: " + " ".join(command))


def measure_cold(cfg, model, files, out, request):
    path = out / f"cold-{model.stem}.jsonl"
    done = {(r["rate"], r["packing"], r["load"], r["repeat"]) for r in read_lines(path)}
    storage = Storage(model)
    rates = cfg.storage_rates if storage.available() else [None]
    arms = cold_arms(files)
    if len(done) < len(rates) * len(arms) * cfg.cold_repeat:
        warm_up(files, arms, request)
    with open(path, "a") as results:
        for rate in rates:
            storage.cap(rate)
            speed = None
            for repeat in range(cfg.cold_repeat):
                for packing, load in arms:
                    if (rate, packing, load, repeat) in done:
                        continue
                    speed = speed or read_speed(storage, files["source"])
                    evict(files[packing])
                    if load.endswith("+state"):
                        evict(state_file(files[packing]))
                    started = time.monotonic()
                    # Exit code 1 with a JSON result: the model wrote no valid call (kept, marked).
                    result = subprocess.run(call_command(files[packing], load, request), capture_output=True,
                                            text=True, preexec_fn=storage.join)
                    wall = (time.monotonic() - started) * 1000
                    if result.returncode not in (0, 1) or not result.stdout.strip():
                        raise RuntimeError(f"call failed: {result.stderr}")
                    call = json.loads(result.stdout)
                    row = {"rate": rate, "read_mb_per_s": speed, "packing": packing, "load": load, "repeat": repeat,
                           "bytes": os.path.getsize(files[packing]), "wall_ms": wall, "load_ms": call["load_ms"],
                           "first_token_ms": call["since_start"]["first_token_ms"],
                           "executable_ms": call["since_start"]["executable_ms"],
                           "prompt_tokens": call["stats"]["prompt_tokens"],
                           "prompt_reused_tokens": call["stats"]["prompt_reused_tokens"], "calls": call["calls"],
                           "valid": not call["error"],
                           "peak_rss_kb": call["stats"]["peak_rss_kb"]}
                    results.write(json.dumps(row) + "\n")
                    results.flush()
                    log(f"cold {model.stem} rate={rate or 'disk'} {packing}/{load} #{repeat}: first token "
                        f"{row['first_token_ms']:.0f} ms, call {row['executable_ms']:.0f} ms")
    storage.cap(None)


def stage(cfg, model, out, request):
    files = packings(cfg, model, out)
    measure_accuracy(cfg, model, files, out)
    measure_cold(cfg, model, files, out, request)


# ---------------------------------------------------------------- report


def report(cfg, models, out):
    sections = []
    for m in models:
        rows = read_lines(out / f"cold-{m.stem}.jsonl")
        if not rows:
            continue
        labels = sorted({r["packing"] for r in rows}, key=lambda p: (p != "source", p))
        accuracy = []
        for pack_path in [None] + sorted(out.glob(f"pack-{m.stem}-*.json")):
            label = "source" if pack_path is None else pack_path.stem[len(f"pack-{m.stem}-"):].replace("-at-", "@")
            key = label.replace("@", "-at-")
            bfcl = out / f"cold-bfcl-{m.stem}-{key}.summary.json"
            quality = out / f"cold-quality-{m.stem}-{key}.json"
            pack = json.loads(pack_path.read_text()) if pack_path else None
            s = json.loads(bfcl.read_text())["modes"][0] if bfcl.exists() else None
            if label == "source" and not s:
                s = source_bfcl(m, out)
            q = json.loads(quality.read_text()) if quality.exists() else None
            size = pack["packed_bytes"] if pack else m.stat().st_size
            accuracy.append([label, fmt(size / 2**20), fmt(pack["bits_per_weight"], 2) if pack else "as shipped",
                             f"{s['correct']}/{s['cases']}" if s else "",
                             f"{q['perplexity']:.3f} ({100 * (q['perplexity'] / q['reference_perplexity'] - 1):+.1f} %)"
                             if q else "", f"{q['kl_divergence']:.4f}" if q else "",
                             f"{100 * q['top1_agreement']:.1f} %" if q else ""])
        # Cold times: geomean over repetitions per (rate, arm).
        cells = {}
        for r in rows:
            cells.setdefault((r["rate"], r["packing"], r["load"]), []).append(r)
        rates = sorted({r["rate"] for r in rows}, key=lambda x: -(x or 1e9))
        arms = [(p, l) for p in labels for l in ARM_LOADS if any((rate, p, l) in cells for rate in rates)]
        table_rows, speed = [], {}
        for rate in rates:
            base = cells.get((rate,) + BASELINE)
            base_ttfc = geomean([r["executable_ms"] for r in base]) if base else None
            for p, l in arms:
                runs = cells.get((rate, p, l))
                if not runs:
                    continue
                ttfc = [r["executable_ms"] for r in runs]
                speed[rate] = geomean([r["read_mb_per_s"] for r in runs])
                table_rows.append([f"{rate} MB/s cap" if rate else "uncapped", fmt(speed[rate], 0), f"{p} / {l}",
                                   fmt(runs[0]["bytes"] / 2**20), fmt(geomean([r["first_token_ms"] for r in runs]), 0),
                                   fmt(geomean(ttfc), 0), f"{min(ttfc):.0f} / {max(ttfc):.0f}",
                                   f"{base_ttfc / geomean(ttfc):.2f}x" if base_ttfc else "",
                                   f"{sum(r.get('valid', True) for r in runs)}/{len(runs)}",
                                   f"{max(r['peak_rss_kb'] for r in runs) / 1024:.0f}"])
        xs = [speed[rate] for rate in rates]
        order = sorted(range(len(xs)), key=lambda i: xs[i])
        series = {f"{p} / {l}": [geomean([r["executable_ms"] for r in cells[(rates[i], p, l)]]) / 1000 for i in order]
                  for p, l in arms if all((rates[i], p, l) in cells for i in order)}
        if len(xs) > 1 and series:
            svg_lines(f"Cold time to the first executable call ({m.stem})", [xs[i] for i in order], series,
                      "storage read speed (MB/s)", "seconds", out / f"cold-speed-{m.stem}.svg")
        sizes = sorted({(cells[(rates[0], p, "mmap")][0]["bytes"], p) for p, l in arms if (rates[0], p, "mmap") in cells})
        by_bytes = {f"{l} at {f'{rate} MB/s' if rate else 'uncapped'}":
                    [geomean([r["executable_ms"] for r in cells[(rate, p, l)]]) / 1000 for _, p in sizes]
                    for rate in sorted({rates[0], rates[-1]}, key=rates.index) for l in ("mmap", "stream", "stream+state")
                    if all((rate, p, l) in cells for _, p in sizes)}
        if len(sizes) > 1 and by_bytes:
            svg_lines(f"Cold time to the first executable call by bytes read ({m.stem})",
                      [b / 2**20 for b, _ in sizes], by_bytes, "model file (MiB)", "seconds",
                      out / f"cold-bytes-{m.stem}.svg")
        allocation = ""
        packs = sorted(out.glob(f"pack-{m.stem}-importance-at-*.md"))
        if packs:
            source_types = {t["source_type"] for t in json.loads(packs[-1].with_suffix(".json").read_text())["tensors"]}
            allocation = (f"\nTypes chosen by `{packs[-1].stem[5:]}` (source types: {', '.join(sorted(source_types))}; "
                          "`schemaweaver pack` prints this table):\n\n" + packs[-1].read_text())
        sections.append(
            f"## Cold start ({m.stem})\n\nBefore every run the model file is dropped from the page cache "
            "(posix_fadvise DONTNEED, checked with mincore); the program and its libraries stay cached. "
            "One `schemaweaver call --json` per run on the Table 8 request, times from the command's start: "
            "first token = the prompt read (load + prefill), call = the call executable. Storage speed: the "
            "read speed of the evicted file measured with `cat`, uncapped (this virtual disk is backed by the "
            "host's cache, far faster than phone flash) and capped by the block-I/O cgroup controller. "
            f"{cfg.cold_repeat} runs per arm, interleaved; geometric means. Baseline: llama.cpp's default load "
            "(mmap) of the file as shipped.\n\n" +
            table(["storage", "read MB/s", "packing / load", "file MiB", "first token (ms)", "call (ms)",
                   "min / max", "vs default", "valid call", "peak RSS MiB"], table_rows) +
            f"\n![](cold-speed-{m.stem}.svg)\n![](cold-bytes-{m.stem}.svg)\n\n"
            f"Accuracy of each packing: BFCL correctness ({cfg.sample}-case sample, schemaweaver mode); "
            f"perplexity, KL(source || packing) and top-1 agreement on {cfg.corpus_tokens} tokens of "
            f"Debian texts ({', '.join(CORPUS_LICENSES)} licenses; manual pages of {', '.join(CORPUS_MANUALS)}; "
            f"sha256 {corpus_digest()}...), "
            f"calibration on {CALIBRATION.name} ({CALIBRATION_TOKENS} tokens at most).\n\n" +
            table(["packing", "MiB", "bits/weight", "BFCL correct", "perplexity (vs source)", "KL (nats)",
                   "top-1 agreement"], accuracy) + allocation)
    return sections

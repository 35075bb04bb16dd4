#!/usr/bin/env python3
"""Latency-guided shaping: pruned shapes of a pretrained model (no retraining), a latency model
fitted on shapes measured on this machine, and a search screened by it.

    python3 bench/shaping.py [--model NAME] [--out DIR] [--quick]

Steps (every measurement is appended to DIR/shaping-<model>.jsonl; a re-run skips what is there):
  edits     perplexity after one edit of the source (on the evaluation corpus): each layer
            dropped, each layer's attention skipped, every FFN narrowed to each width, the
            model narrowed to each width
  latency   random shapes measured: prefill of a 1024-token prompt and decode per token
            (`schemaweaver costs --prefill`), and their quality; a linear latency model in the
            shape's costs (layers, layers with attention and their width, FFN channels times the
            width, the width, a width that changes the quantization types; coefficients >= 0) is
            fitted on three quarters of them and checked on the rest and on every shape measured
            later (Kendall tau, relative error), beside parameter count and FLOPs; every latency
            is the faster of two measurements
  search    an evolutionary search over shapes, each scored by the latency model and by the sum
            of its edits' measured perplexity costs (never more than three consecutive layers
            without attention, the paper's lesson); the non-dominated shapes are then measured
  baseline  the source with its last N layers dropped, measured
  report    the measured Pareto front against the baseline (table and SVG), the fastest shape
            within 10 % perplexity of the source with its BFCL correctness and tool-call latency
            (SchemaWeaver), in DIR/shaping-<model>.md

Standard library only; the shapes are written by `schemaweaver shape`, measured by
`schemaweaver costs` and `schemaweaver quality`.
"""
import argparse
import datetime
import hashlib
import itertools
import json
import math
import random
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from benchlib import CACHE, CLI, DEFAULT_MODEL, ROOT, bfcl_command, fmt, log, machine, read_lines, run, svg_points, table
import coldstart

PROMPT_TOKENS = 1024   # the prefill the latency model predicts
DECODE_TOKENS = 32
CALL_DECODE_TOKENS = 64  # latency objective: a 1024-token prompt read, then 64 tokens decoded
MAX_SKIPPED_RUN = 3      # consecutive layers without attention, at most


@dataclass(frozen=True)
class Shape:
    layers: tuple            # source layers kept
    skip: tuple = ()         # kept source layers without attention
    ffn: int = 0             # FFN width of every kept layer (0: the source's)
    width: int = 0           # model width (0: the source's)

    def key(self):
        return hashlib.sha1(repr(self).encode()).hexdigest()[:12]

    def args(self):
        out = ["--layers", ",".join(map(str, self.layers))]
        if self.ffn:
            out += ["--ffn", str(self.ffn)]
        if self.skip:
            out += ["--skip-attention", ",".join(map(str, self.skip))]
        if self.width:
            out += ["--width", str(self.width)]
        return out

    def valid(self):
        if not self.layers or self.layers[0] in self.skip:
            return False
        run_length = 0
        for layer in self.layers:
            run_length = run_length + 1 if layer in self.skip else 0
            if run_length > MAX_SKIPPED_RUN:
                return False
        return True


@dataclass
class Study:
    model: Path
    out: Path
    layers: int
    ffn: int
    embedding: int           # the source's model width
    widths: list             # FFN widths searched
    model_widths: list       # model widths searched
    tokens: int
    records: dict = field(default_factory=dict)   # shape key -> record
    retyped_widths: frozenset = frozenset()       # model widths whose matrices change quantization type

    @property
    def path(self):
        return self.out / f"shaping-{self.model.stem}.jsonl"

    def full(self):
        return Shape(tuple(range(self.layers)))

    def shape(self, layers, skip=(), ffn=0, width=0):
        """A shape with the source's FFN width and model width written as 0, so that one shape
        has one key however it was reached."""
        return Shape(tuple(layers), tuple(skip), 0 if ffn == self.ffn else ffn, 0 if width == self.embedding else width)

    def shape_of(self, record):
        return self.shape(record["layers"], record["skip"], record["ffn"], record["embedding"])


# ---------------------------------------------------------------- measuring


def source_info(model):
    """The source as `shape` reads it (layers, FFN width, parameters); the unchanged copy it
    writes is deleted."""
    probe = CACHE / "shaped" / f"{model.stem}-unchanged.json"
    if not probe.exists():
        probe.parent.mkdir(parents=True, exist_ok=True)
        out = CACHE / "shaped" / f"{model.stem}-unchanged.gguf"
        result = subprocess.run([str(c) for c in [CLI, "shape", "-m", model, "-o", out, "--json", probe]],
                                capture_output=True, text=True)
        if result.returncode != 0:
            sys.exit(f"shaping.py: {model.name} cannot be shaped: {result.stderr.strip()}")
        out.unlink()
    return json.loads(probe.read_text())


def write_shape(study, shape, path, info_path):
    """`schemaweaver shape` of the source into `path` (its description into `info_path`)."""
    run([CLI, "shape", "-m", study.model, "-o", path, "--json", info_path, "--calibration", coldstart.CALIBRATION,
         "--tokens", 256] + shape.args(), stdout=subprocess.DEVNULL)


def measure(study, shape, role, speed=True, keep=False):
    """The shape's record (measured now unless a record with its key and the wanted parts
    exists): parameters, perplexity and KL against the source, and with `speed` the prefill
    and decode times."""
    key = shape.key()
    old = study.records.get(key)
    if old and (old.get("prefill_ms") is not None or not speed) and (not keep or Path(old["file"]).exists()):
        return old
    path = CACHE / "shaped" / f"{study.model.stem}-{key}.gguf"
    info_path = path.with_suffix(".json")
    if not path.exists() or not info_path.exists():
        write_shape(study, shape, path, info_path)
    info = json.loads(info_path.read_text())
    record = dict(old or {}, key=key, role=old["role"] if old else role, layers=list(shape.layers), skip=list(shape.skip),
                  ffn=shape.ffn or study.ffn, parameters=info["parameters"],
                  embedding_parameters=info["embedding_parameters"], embedding=info["embedding"],
                  heads=info["heads"], head_dim=info["head_dim"], bytes=info["bytes"], file=str(path))
    if "perplexity" not in record:
        quality_path = study.out / "quality.tmp.json"
        run([CLI, "quality", "-m", path, "--reference", study.model, "--text", coldstart.corpus(), "--tokens",
             study.tokens, "--json", quality_path], stdout=subprocess.DEVNULL)
        quality = json.loads(quality_path.read_text())
        quality_path.unlink()
        record.update(perplexity=quality["perplexity"], reference_perplexity=quality["reference_perplexity"],
                      kl=quality["kl_divergence"], top1=quality["top1_agreement"])
    if speed and record.get("prefill_ms") is None:
        record.update(speed_of(path))
    study.records[key] = record
    with open(study.path, "a") as f:
        f.write(json.dumps(record) + "\n")
    if not keep:
        path.unlink()
        info_path.unlink()
    return record


def speed_of(path):
    costs = json.loads(run([CLI, "costs", "-m", path, "--prefill", PROMPT_TOKENS, "--decode", DECODE_TOKENS,
                            "--rounds", 3, "--json"], capture_output=True, text=True).stdout)
    return {"prefill_ms": costs["prefill_ms"], "decode_ms": costs["decode_ms_per_token"]}


def check_target(study, target_ms):
    """Refuses a latency target below what the smallest shape (one layer, the narrowest FFN and
    width searched) measures, before the long measurements start."""
    smallest = Shape((0,), (), min(study.widths), min(study.model_widths))
    path = CACHE / "shaped" / f"{study.model.stem}-smallest.gguf"
    write_shape(study, smallest, path, path.with_suffix(".json"))
    speed = speed_of(path)
    path.unlink()
    path.with_suffix(".json").unlink()
    floor = call_ms(speed["prefill_ms"], speed["decode_ms"])
    if target_ms < floor:
        sys.exit(f"shaping.py: no shape can reach a call latency of {target_ms:g} ms: the smallest shape searched "
                 f"(1 layer, FFN {smallest.ffn}, width {smallest.width}) takes {floor:.0f} ms on this machine")


def measure_again(study, records, rng):
    """A second speed measurement of each record, in shuffled order and later than the first:
    the machine is shared and noisy (two back-to-back runs can differ by 12 %), so the latency
    model takes the faster of the two medians."""
    order = list(records)
    rng.shuffle(order)
    for r in order:
        if len(r.get("prefill_runs", [])) >= 2:
            continue
        if r["key"] == "source":
            path = study.model
        else:
            path = Path(measure(study, study.shape_of(r), r["role"], keep=True)["file"])
        again = speed_of(path)
        r["prefill_runs"] = r.get("prefill_runs", [r["prefill_ms"]]) + [again["prefill_ms"]]
        r["decode_runs"] = r.get("decode_runs", [r["decode_ms"]]) + [again["decode_ms"]]
        r["prefill_ms"], r["decode_ms"] = min(r["prefill_runs"]), min(r["decode_runs"])
        study.records[r["key"]] = r
        with open(study.path, "a") as f:
            f.write(json.dumps(r) + "\n")
        if path != study.model:
            path.unlink()
            path.with_suffix(".json").unlink()


def call_ms(prefill_ms, decode_ms):
    return prefill_ms + CALL_DECODE_TOKENS * decode_ms


# ---------------------------------------------------------------- the latency model


def features(study, shape):
    """The shape's cost terms, each relative to the source's: a fixed part, per layer, per layer
    with attention (and its projections, times the width), FFN channels times the width, the
    width alone (the output matrix), and the FFN's channels again where the width changes the
    matrices' quantization type (their kernels run at another speed: on Qwen2.5-Coder-1.5B a
    width of 1504 instead of 1536 takes Q4_K to Q5_0 and makes the prefill slower, not faster;
    the FFN holds most of those matrices)."""
    layers, attention = len(shape.layers), len(shape.layers) - len(shape.skip)
    model_width = shape.width or study.embedding
    ffn, width = (shape.ffn or study.ffn) / study.ffn, model_width / study.embedding
    ffn_term = layers * ffn * width / study.layers
    retyped = float(model_width in study.retyped_widths)
    return [1.0, layers / study.layers, attention / study.layers, attention * width / study.layers, ffn_term, width,
            retyped * ffn_term]


def retyped_widths(study, source):
    """The model widths whose matrices the shape writes in other quantization types, known from
    the width edits' measured bits per weight (the types' blocks must fit the narrower rows)."""
    bits = lambda r: r["bytes"] / r["parameters"]
    full = study.full()
    return frozenset(w for w in study.model_widths if w != study.embedding and
                     abs(bits(study.records[study.shape(full.layers, (), 0, w).key()]) / bits(source) - 1) > 0.01)


def solve(a, b):
    """Least squares by the normal equations (a few features): x minimising |a x - b|."""
    n = len(a[0])
    m = [[sum(r[i] * r[j] for r in a) for j in range(n)] + [sum(r[i] * y for r, y in zip(a, b))] for i in range(n)]
    for i in range(n):
        m[i][i] += 1e-6  # a feature constant over the sample leaves the system singular
        pivot = max(range(i, n), key=lambda r: abs(m[r][i]))
        m[i], m[pivot] = m[pivot], m[i]
        for r in range(n):
            if r != i and m[i][i]:
                f = m[r][i] / m[i][i]
                m[r] = [x - f * y for x, y in zip(m[r], m[i])]
    return [m[i][n] / m[i][i] if m[i][i] else 0.0 for i in range(n)]


def solve_nonnegative(a, b):
    """Least squares with every coefficient >= 0: each term is a cost, and a negative one fits the
    noise of a few measurements and breaks the prediction of shapes outside the sample (a
    12-layer shape predicted at a sixth of its time). The optimum is the plain least squares of
    the features it keeps, so with a few features every subset is tried."""
    n, best, best_residual = len(a[0]), [0.0] * len(a[0]), math.inf
    for size in range(1, n + 1):
        for kept in itertools.combinations(range(n), size):
            x = solve([[row[i] for i in kept] for row in a], b)
            if min(x) < 0:
                continue
            full = [0.0] * n
            for i, v in zip(kept, x):
                full[i] = v
            residual = sum((sum(p * q for p, q in zip(row, full)) - y) ** 2 for row, y in zip(a, b))
            if residual < best_residual:
                best, best_residual = full, residual
    return best


def kendall_tau(xs, ys):
    concordant = discordant = 0
    for i in range(len(xs)):
        for j in range(i + 1, len(xs)):
            s = (xs[i] - xs[j]) * (ys[i] - ys[j])
            concordant += s > 0
            discordant += s < 0
    pairs = len(xs) * (len(xs) - 1) / 2
    return (concordant - discordant) / pairs if pairs else 0.0


def flops(r):
    """Floating-point operations of a 1024-token prefill: every weight matrix but the embedding
    table for every token, the output (the table, tied) for the last token only, and the
    attention scores and weighted values of the layers with attention (causal: half the pairs)."""
    attention_layers = len(r["layers"]) - len(r["skip"])
    per_token = r["parameters"] - r["embedding_parameters"]
    return (2 * per_token * PROMPT_TOKENS + 2 * r["embedding_parameters"] +
            2 * attention_layers * PROMPT_TOKENS ** 2 * r["heads"] * r["head_dim"])


class LatencyModel:
    def __init__(self, study, records):
        self.study = study
        rows = [features(study, study.shape_of(r)) for r in records]
        self.prefill = solve_nonnegative(rows, [r["prefill_ms"] for r in records])
        self.decode = solve_nonnegative(rows, [r["decode_ms"] for r in records])

    def predict(self, shape):
        x = features(self.study, shape)
        return (sum(a * b for a, b in zip(self.prefill, x)), sum(a * b for a, b in zip(self.decode, x)))


def check_latency_model(study, model, records):
    """How well the model ranks and predicts the call latency of shapes it was not fitted on,
    beside parameter count and FLOPs as rankers."""
    measured = [call_ms(r["prefill_ms"], r["decode_ms"]) for r in records]
    predicted = [call_ms(*model.predict(study.shape_of(r))) for r in records]
    errors = [abs(p - m) / m for p, m in zip(predicted, measured)]
    return {"shapes": len(records),
            "kendall_tau_model": kendall_tau(predicted, measured),
            "kendall_tau_parameters": kendall_tau([r["parameters"] for r in records], measured),
            "kendall_tau_flops": kendall_tau([flops(r) for r in records], measured),
            "mean_relative_error": sum(errors) / len(errors), "max_relative_error": max(errors)}


# ---------------------------------------------------------------- shapes


def random_shape(study, rng):
    while True:
        dropped = set(rng.sample(range(1, study.layers), rng.randint(0, study.layers // 2)))
        layers = tuple(i for i in range(study.layers) if i not in dropped)
        skip = tuple(sorted(rng.sample(layers[1:], rng.randint(0, len(layers) // 3))))
        # A third of the shapes narrower, so that the latency model sees the width vary.
        width = rng.choice(study.model_widths) if rng.random() < 1 / 3 else study.embedding
        shape = study.shape(layers, skip, rng.choice(study.widths), width)
        if shape.valid():
            return shape


def mutate(shape, study, rng):
    layers, skip, ffn, width = set(shape.layers), set(shape.skip), shape.ffn, shape.width
    what = rng.randrange(4)
    if what == 0:  # a layer dropped or restored
        layer = rng.randrange(1, study.layers)
        if layer in layers and len(layers) > 2:
            layers.discard(layer)
            skip.discard(layer)
        else:
            layers.add(layer)
    elif what == 1:  # attention of a layer skipped or restored
        layer = rng.choice(sorted(layers)[1:] or [0])
        skip.symmetric_difference_update({layer})
    elif what == 2:
        ffn = rng.choice(study.widths)
    else:
        width = rng.choice(study.model_widths)
    out = study.shape(sorted(layers), sorted(skip & layers), ffn, width)
    return out if out.valid() else shape


def quality_proxy(shape, study, edits):
    """The sum of the log-perplexity costs of the shape's edits, each measured alone."""
    cost = sum(edits["drop"][i] for i in range(study.layers) if i not in shape.layers)
    cost += sum(edits["skip"][i] for i in shape.skip)
    cost += edits["ffn"][shape.ffn or study.ffn] * len(shape.layers) / study.layers
    cost += edits["width"][shape.width or study.embedding]
    return cost


def spread(items, count):
    """`count` items evenly spaced along the list (all of them if there are fewer)."""
    if len(items) <= count:
        return list(items)
    return [items[round(i * (len(items) - 1) / (count - 1))] for i in range(count)] if count > 1 else items[:1]


def pareto(points, key_x, key_y):
    """The points no other point beats on both (smaller is better on both)."""
    front = []
    for p in sorted(points, key=lambda p: (key_x(p), key_y(p))):
        if not front or key_y(p) < key_y(front[-1]):
            front.append(p)
    return front


def search(study, model, edits, rng, generations, population_size):
    score = lambda s: (call_ms(*model.predict(s)), quality_proxy(s, study, edits))
    population = {random_shape(study, rng) for _ in range(population_size)} | {study.full()}
    for _ in range(generations):
        children = {mutate(rng.choice(sorted(population, key=repr)), study, rng) for _ in range(population_size)}
        pool = sorted(population | children, key=repr)
        scored = {s: score(s) for s in pool}
        front = pareto(pool, lambda s: scored[s][0], lambda s: scored[s][1])
        rest = [s for s in pool if s not in front]
        rng.shuffle(rest)
        population = set(front) | set(rest[:max(0, population_size - len(front))])
    scored = {s: score(s) for s in population}
    return pareto(sorted(population, key=repr), lambda s: scored[s][0], lambda s: scored[s][1])


# ---------------------------------------------------------------- steps


def measure_edits(study):
    """log(perplexity / source perplexity) of each single edit."""
    def cost(shape):
        if not shape.valid():
            return math.inf
        r = measure(study, shape, "edit", speed=False)
        return math.log(r["perplexity"] / r["reference_perplexity"])

    full = study.full()
    return {"drop": {i: cost(Shape(tuple(j for j in full.layers if j != i))) for i in full.layers},
            "skip": {i: cost(Shape(full.layers, (i,))) for i in full.layers},
            "ffn": {w: cost(study.shape(full.layers, (), w)) if w != study.ffn else 0.0 for w in study.widths},
            "width": {w: cost(study.shape(full.layers, (), 0, w)) if w != study.embedding else 0.0
                      for w in study.model_widths}}


def fastest_within(measured, reference, bound=1.1):
    within = [r for r in measured if r["perplexity"] <= bound * reference]
    return min(within, key=lambda r: call_ms(r["prefill_ms"], r["decode_ms"])) if within else None


def bfcl(study, path, name, sample):
    """The schemaweaver mode's BFCL summary for a model file (run once, kept in the results)."""
    stem = study.out / f"shaping-bfcl-{name}"
    if not Path(f"{stem}.summary.json").exists():
        run(bfcl_command(path, sample, "schemaweaver", f"{stem}.jsonl", f"{stem}.summary.json", seed=1, repeat=1,
                         warmup=1) + ["--resume"], stdout=subprocess.DEVNULL)
    return json.loads(Path(f"{stem}.summary.json").read_text())["modes"][0]


def widths_of(ffn, steps):
    """FFN widths to search: multiples of 256 (whole k-quant super-blocks) from the source's down."""
    return sorted({max(256, (ffn * k // steps) // 256 * 256) for k in range(steps // 2, steps + 1)} | {ffn})


def model_widths_of(embedding):
    """Model widths to search: multiples of 32 down to three quarters of the source's (without
    retraining, narrower costs too much to be worth measuring)."""
    return sorted({embedding, embedding - 32} | {(embedding * k // 16) // 32 * 32 for k in (12, 14, 15)})


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default=DEFAULT_MODEL)
    parser.add_argument("--out", default=None)
    parser.add_argument("--quick", action="store_true", help="few samples and generations (a check of the pipeline)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--max-latency-ms", type=float, default=None,
                        help="a call-latency target: the report names the most accurate measured shape within it")
    cfg = parser.parse_args()
    cfg.bfcl_sample = 10 if cfg.quick else 100
    model = CACHE / "models" / f"{cfg.model}.gguf"
    if not model.exists():
        sys.exit(f"shaping.py: no model {model}; run scripts/setup.sh --models all first")
    out = Path(cfg.out or ROOT / "bench" / "results" / f"{datetime.date.today()}-shaping")
    out.mkdir(parents=True, exist_ok=True)
    info = source_info(model)
    layers, ffn, embedding = info["source_layers"], info["source_ffn"], info["embedding"]
    study = Study(model, out, layers, ffn, embedding, widths_of(ffn, 8), model_widths_of(embedding),
                  256 if cfg.quick else 1024)
    study.records = {r["key"]: r for r in read_lines(study.path)}
    rng = random.Random(cfg.seed)
    samples, generations, population = (8, 4, 16) if cfg.quick else (24, 40, 48)

    source = dict(study.records.get("source") or {
        "key": "source", "role": "source", "layers": list(range(layers)), "skip": [], "ffn": ffn,
        **{k: info[k] for k in ("parameters", "embedding_parameters", "embedding", "heads", "head_dim", "bytes")}})
    if "prefill_ms" not in source:
        source.update(speed_of(model))
        study.records["source"] = source
        with open(study.path, "a") as f:
            f.write(json.dumps(source) + "\n")

    log(f"{model.stem}: {layers} layers, FFN {ffn}, width {embedding}; FFN widths {study.widths}, "
        f"model widths {study.model_widths}")
    if cfg.max_latency_ms is not None:
        check_target(study, cfg.max_latency_ms)
    edits = measure_edits(study)
    study.retyped_widths = retyped_widths(study, source)
    sampled = [measure(study, random_shape(study, rng), "sample") for _ in range(samples)]
    measure_again(study, sampled + [source], rng)
    sampled = [study.records[r["key"]] for r in sampled]
    source = study.records["source"]
    held_out = sampled[3::4]
    train = [r for r in sampled if r not in held_out] + [source]
    latency_model = LatencyModel(study, train)
    check = {"train": len(train), "prefill_coefficients": latency_model.prefill,
             "decode_coefficients": latency_model.decode,
             "held_out": check_latency_model(study, latency_model, held_out)}
    log(f"latency model: Kendall tau {check['held_out']['kendall_tau_model']:.3f} on {len(held_out)} held-out shapes")
    front = search(study, latency_model, edits, rng, generations, population)
    # Most of the confirmations where the edits' summed cost stays within 10 % perplexity (the
    # region the result is asked for; edits do not add up exactly), a few beyond it.
    mild = [shape for shape in front if quality_proxy(shape, study, edits) <= math.log(1.1)]
    chosen = spread(mild, 10) + spread([shape for shape in front if shape not in mild], 4)
    confirmed = [measure(study, s, "search") for s in chosen]
    baseline = [measure(study, Shape(tuple(range(layers - n))), "baseline")
                for n in range(1, layers // 2 + 1, max(1, layers // 12))]
    measure_again(study, confirmed + baseline, rng)
    confirmed, baseline = ([study.records[r["key"]] for r in group] for group in (confirmed, baseline))
    measured = list({r["key"]: r for r in confirmed + sampled}.values())
    # The search's confirmations and the baseline were measured after the fit: more held-out
    # shapes, and of the kinds the search picks.
    fitted = {r["key"] for r in train}
    outside = list({r["key"]: r for r in held_out + confirmed + baseline if r["key"] not in fitted}.values())
    check["outside_fit"] = check_latency_model(study, latency_model, outside)
    # The front's model files are the study's output: written again where measuring removed them.
    for r in measured_front(measured, source):
        if r["key"] != "source":
            measure(study, study.shape_of(r), r["role"], keep=True)
    fastest = fastest_within(measured, measured[0]["reference_perplexity"])
    results = {}
    if fastest:
        shape = study.shape_of(fastest)
        kept = measure(study, shape, fastest["role"], keep=True)
        results = {model.stem: bfcl(study, model, model.stem, cfg.bfcl_sample),
                   f"shape {shape.key()}": bfcl(study, kept["file"], shape.key(), cfg.bfcl_sample)}
    report(study, source, check, measured, baseline, results, cfg.max_latency_ms)


# ---------------------------------------------------------------- report


def measured_front(measured, source):
    """The measured shapes and the source that no other beats on both call latency and perplexity."""
    source = dict(source, perplexity=measured[0]["reference_perplexity"], kl=0.0)
    return pareto(measured + [source], lambda r: call_ms(r["prefill_ms"], r["decode_ms"]), lambda r: r["perplexity"])


def report(study, source, check, measured, baseline, fastest_bfcl, target_ms):
    latency = lambda r: call_ms(r["prefill_ms"], r["decode_ms"])
    held, outside = check["held_out"], check["outside_fit"]
    reference = measured[0]["reference_perplexity"]
    front = measured_front(measured, source)
    fastest = fastest_within(measured, reference)
    in_target = [r for r in measured if target_ms is not None and latency(r) <= target_ms]
    best_in_target = min(in_target, key=lambda r: r["perplexity"]) if in_target else None

    def row(r):
        return [r["key"], r["role"], f"{len(r['layers'])}", r["ffn"], r["embedding"], len(r["skip"]),
                f"{r.get('parameters', 0) / 1e6:.1f}",
                fmt(r["prefill_ms"], 0), fmt(r["decode_ms"], 2), fmt(latency(r), 0),
                f"{r['perplexity']:.3f} ({100 * (r['perplexity'] / reference - 1):+.1f} %)",
                f"{r.get('kl', 0):.4f}"]

    header = ["shape", "role", "layers", "FFN", "width", "no attention", "M params", "prefill 1024 (ms)", "decode (ms/token)",
              "call (ms)", "perplexity (vs source)", "KL"]
    # Does the front beat the baseline at equal latency? Compare with the front's best perplexity
    # at that latency or less.
    beaten = []
    for b in baseline:
        better = [r for r in front if latency(r) <= latency(b) * 1.02]
        beaten.append(bool(better) and min(r["perplexity"] for r in better) < b["perplexity"])
    svg_points(f"Measured shapes of {study.model.stem}: perplexity against latency",
               {"Pareto front": [(latency(r), r["perplexity"]) for r in front],
                "all measured": [(latency(r), r["perplexity"]) for r in measured],
                "baseline: last layers dropped": [(latency(r), r["perplexity"]) for r in baseline]},
               f"call latency: 1024-token prefill + {CALL_DECODE_TOKENS} decoded tokens (ms)", "perplexity",
               study.out / f"shaping-{study.model.stem}.svg", connect={"Pareto front", "baseline: last layers dropped"})
    text = (f"# Shaping {study.model.stem}\n\nMachine: {machine()['cpu']}. Date: {datetime.date.today()}. "
            f"Perplexity on {study.tokens} tokens of the Debian evaluation corpus; latency from `schemaweaver costs "
            f"--prefill {PROMPT_TOKENS} --decode {DECODE_TOKENS}` (median of 3 rounds); call latency = prefill + "
            f"{CALL_DECODE_TOKENS} x decode.\n\n## Latency model\n\nLinear in the shape's cost terms (a fixed part, layers, layers "
            f"with attention, those times the model width, FFN channels times the width, the width, and the FFN term "
            f"again for a width whose matrices change quantization type), fitted on "
            f"{check['train']} measured shapes (random samples and the source). Checked on the other random samples "
            f"and on every shape measured after the fit (the search's confirmations, the baseline):\n\n" +
            table(["predictor", f"Kendall tau, {held['shapes']} held-out samples",
                   f"Kendall tau, all {outside['shapes']} shapes outside the fit"],
                  [[name, f"{held[key]:.3f}", f"{outside[key]:.3f}"] for name, key in
                   (("latency model", "kendall_tau_model"), ("parameter count", "kendall_tau_parameters"),
                    ("FLOPs", "kendall_tau_flops"))]) +
            f"\nLatency model relative error: held-out samples mean {100 * held['mean_relative_error']:.1f} %, max "
            f"{100 * held['max_relative_error']:.1f} %; all shapes outside the fit mean "
            f"{100 * outside['mean_relative_error']:.1f} %, max {100 * outside['max_relative_error']:.1f} %.\n\n## Measured Pareto front\n\n" +
            table(header, [row(r) for r in front]) +
            f"\nThe front's model files (and the fastest shape's within 10 % perplexity) are kept as "
            f"`$SCHEMAWEAVER_CACHE/shaped/{study.model.stem}-<shape>.gguf`, each with its shape (layers kept, FFN "
            f"widths, layers without attention, width) in the `.json` beside it.\n\n![](shaping-{study.model.stem}.svg)\n\n## Baseline: the last layers dropped\n\n" +
            table(header + ["beaten by the front"], [row(r) + ["yes" if b else "no"] for r, b in zip(baseline, beaten)]) +
            (f"\nFastest shape within 10 % perplexity of the source:\n\n" + table(header, [row(fastest)]) +
             ("" if latency(fastest) < latency(source) else
              f"\nIt is not faster than the source ({fmt(latency(source), 0)} ms): no measured shape within 10 % "
              f"perplexity is.\n") if fastest else
             "\nNo measured shape is within 10 % perplexity of the source.\n") +
            ("\nBFCL with SchemaWeaver (schemaweaver mode):\n\n" + table(
                ["model", "correct", "tool-call latency geomean (ms)", "passes/call"],
                [[name, f"{s['correct']}/{s['cases']}", fmt(s["latency_geomean_ms"]), fmt(s["passes_per_call"])]
                 for name, s in fastest_bfcl.items()]) if fastest_bfcl else "") +
            ("" if target_ms is None else
             f"\nMost accurate measured shape within the {target_ms:g} ms target:\n\n" + table(header, [row(best_in_target)])
             if best_in_target else f"\nNo measured shape is within the {target_ms:g} ms target.\n"))
    (study.out / f"shaping-{study.model.stem}.md").write_text(text)
    (study.out / f"shaping-{study.model.stem}.json").write_text(json.dumps(
        {"latency_model": check, "front": front, "baseline": baseline, "fastest_within_10_percent": fastest,
         "bfcl": fastest_bfcl, "latency_target_ms": target_ms, "best_within_target": best_in_target},
        indent=2) + "\n")
    log(f"report: {study.out / f'shaping-{study.model.stem}.md'}")


if __name__ == "__main__":
    main()

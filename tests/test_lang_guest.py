"""D one-liners end to end, each against ground truth, on both arches.

Every one-liner of ONE_LINERS is compiled by bench/lang/, run in the guest
at real probes (bench/lang/runner.py: all of an arch's in one boot, so the
table costs one boot per arch) and held against what the workload or a
closed form says:

- calltree (2 threads x 20 iterations, depth 4, no reference run): per
  function, root m, rec m(d+1), mid 2m, add m(d+2), mul 2m calls per
  thread; ct_rec's depth argument takes d..0 once per root call; ct_mul's
  last argument is always 3; ct_add's callers are ct_mid (2 per root) and
  ct_rec (d per root);
- fib(10): the argument of every call, by simulating the recursion here;
  the leaves (n < 2) are fib(11); the return values are fib(k) per call;
- latency pairs: every return of ct_mid finds the self->ts its own entry
  set (none finds it unset), and self->d counts ct_rec's depth to d + 1;
- a sum past 2^32 (uint32 arguments + 0xf0000000, 80 of them) exact on
  i386 as on sparc64;
- several printfs of a probe in program order; a probe whose every
  clause's predicate probefunc decides false is not armed; a char *
  argument compared with strings (the word boundary: "calltree" is 8
  bytes, its NUL in the next word on sparc64); END's printf
  of globals the probes counted; exit(n) ending the run at once (through
  the CLI, in a boot of its own).

A broken variant: the same table with one expected value changed fails
(test_a_wrong_truth_is_caught), so the checks can fail.
"""

import re
from collections import Counter

import pytest

from bench import arches
from bench.paths import REPO
from bench.lang.runner import run_scripts
from bench.program.aggregate import bucket_of
from bench.trace.image import load_image

T, M, D = 2, 20, 4                                   # threads, iterations, depth
CT = "calltree threads=2 iters=20 ref=0"
FIB = "fib n=10"
PER_THREAD = {"ct_root": M, "ct_rec": M * (D + 1), "ct_mid": 2 * M,
              "ct_add": M * (D + 2), "ct_mul": 2 * M}
ALL = {f: n * T for f, n in PER_THREAD.items()}


def fib_calls(n: int) -> Counter:
    """How often fib(k) is called for each k, computing fib(n) naively."""
    calls: Counter = Counter()
    todo = [n]
    while todo:
        k = todo.pop()
        calls[k] += 1
        if k >= 2:
            todo += [k - 1, k - 2]
    return calls


def fib(k: int) -> int:
    a, b = 0, 1
    for _ in range(k):
        a, b = b, a + b
    return a


FC = fib_calls(10)
ONE = ()                                              # the key of a keyless row


def _ct_counts(o, arch):
    return {k: v for k, v in o.values().items() if k in ALL}


def _callers(o, arch):
    img = load_image(arch.elf())
    out: Counter = Counter()
    for k, v in o.values().items():
        out[img.function_at(int(k, 16)).name] += v
    return dict(out)


# (id, script, run line, what to compute from the outcome, the truth)
ONE_LINERS = [
    ("calls per function", "fbt::ct_*:entry { @[probefunc] = count(); }", CT,
     _ct_counts, ALL),
    ("calls per function and thread",
     'fbt::ct_*:entry /probefunc != "ct_thread" && probefunc != "ct_counts_ok"/ '
     "{ @[probefunc, tid] = count(); }", CT,
     lambda o, a: sorted(Counter((k[0], v) for k, v in o.values().items()).items()),
     sorted(((f, n), T) for f, n in PER_THREAD.items())),
    ("count one function", "fbt::ct_add:entry { @ = count(); }", CT,
     lambda o, a: o.values()[ONE], ALL["ct_add"]),
    ("count returns", "fbt::ct_add:return { @ = count(); }", CT,
     lambda o, a: o.values()[ONE], ALL["ct_add"]),
    ("a typed argument as the key", "fbt::ct_mul:entry { @[args[2]] = count(); }", CT,
     lambda o, a: o.values(), {"3": ALL["ct_mul"]}),
    ("depth argument distribution", "fbt::ct_rec:entry { @[args[1]] = count(); }", CT,
     lambda o, a: o.values(), {str(d): M * T for d in range(D + 1)}),
    ("predicate ==", "fbt::ct_rec:entry /args[1] == 0/ { @ = count(); }", CT,
     lambda o, a: o.values()[ONE], M * T),
    ("predicate >", "fbt::ct_rec:entry /args[1] > 2/ { @ = count(); }", CT,
     lambda o, a: o.values()[ONE], 2 * M * T),
    ("predicate range with &&",
     "fbt::ct_rec:entry /args[1] >= 2 && args[1] <= 3/ { @ = count(); }", CT,
     lambda o, a: o.values()[ONE], 2 * M * T),
    ("predicate ||", "fbt::ct_rec:entry /args[1] == 0 || args[1] == 4/ { @ = count(); }",
     CT, lambda o, a: o.values()[ONE], 2 * M * T),
    ("fib calls", "fbt::fib:entry { @ = count(); }", FIB,
     lambda o, a: o.values()[ONE], 2 * fib(11) - 1),
    ("fib's argument distribution", "fbt::fib:entry { @[arg0] = count(); }", FIB,
     lambda o, a: o.values(), {str(k): n for k, n in FC.items()}),
    ("quantize", "fbt::fib:entry { @ = quantize(arg0); }", FIB,
     lambda o, a: o.values()[ONE],
     {b: sum(n for k, n in FC.items() if bucket_of(k) == b)
      for b in {bucket_of(k) for k in FC}}),
    ("lquantize", "fbt::fib:entry { @ = lquantize(arg0, 0, 10, 2); }", FIB,
     lambda o, a: o.values()[ONE],
     {i: sum(n for k, n in FC.items() if (k // 2 + 1 if k < 10 else 6) == i)
      for i in {k // 2 + 1 if k < 10 else 6 for k in FC}}),
    ("predicate on fib's argument", "fbt::fib:entry /arg0 < 2/ { @ = count(); }", FIB,
     lambda o, a: o.values()[ONE], fib(11)),
    ("sum", "fbt::fib:entry { @ = sum(arg0); }", FIB,
     lambda o, a: o.values()[ONE], sum(k * n for k, n in FC.items())),
    ("min", "fbt::fib:entry { @ = min(arg0); }", FIB,
     lambda o, a: o.values()[ONE], 0),
    ("max", "fbt::fib:entry { @ = max(arg0); }", FIB,
     lambda o, a: o.values()[ONE], 10),
    ("avg", "fbt::fib:entry { @ = avg(arg0); }", FIB,
     lambda o, a: o.values()[ONE],
     sum(k * n for k, n in FC.items()) // sum(FC.values())),
    ("retval distribution", "fbt::fib:return { @[retval] = count(); }", FIB,
     lambda o, a: o.values(),
     {str(v): sum(n for k, n in FC.items() if fib(k) == v) for v in {fib(k) for k in FC}}),
    ("DTrace's arg1 on a return is retval", "fbt::fib:return { @[arg1] = count(); }",
     FIB, lambda o, a: o.values(),
     {str(v): sum(n for k, n in FC.items() if fib(k) == v) for v in {fib(k) for k in FC}}),
    ("DTrace's arg0 on a return is its offset",
     "fbt::ct_mul:return { @[arg0 > 0 && arg0 < 256] = count(); }", CT,
     lambda o, a: o.values(), {"1": ALL["ct_mul"]}),
    ("latency pairs: each return finds its own entry's self->ts",
     "fbt::ct_mid:entry { self->ts = timestamp; } "
     "fbt::ct_mid:return /self->ts == 0/ { @bad = count(); } "
     "fbt::ct_mid:return /self->ts/ { @ok = count(); @lat = min(timestamp - self->ts); "
     "self->ts = 0; }", CT,
     lambda o, a: (o.values("ok")[ONE], o.values("bad").get(ONE, 0),
                   o.values("lat")[ONE] > 0),
     (ALL["ct_mid"], 0, True)),
    ("self-> depth of a recursion",
     "fbt::ct_rec:entry { self->d++; @m = max(self->d); } "
     "fbt::ct_rec:return { self->d--; }", CT,
     lambda o, a: o.values("m")[ONE], D + 1),
    ("a clause-local this->", "fbt::ct_mul:entry { this->b = args[2]; "
     "@ = sum(this->b * 2); }", CT, lambda o, a: o.values()[ONE], 6 * ALL["ct_mul"]),
    ("per cpu", "fbt::ct_add:entry { @[cpu] = count(); }", CT,
     lambda o, a: (sum(o.values().values()), all(k.startswith("cpu")
                                                 for k in o.values())),
     (ALL["ct_add"], True)),
    ("per thread", "fbt::ct_root:entry { @[tid] = count(); }", CT,
     lambda o, a: sorted(o.values().values()), [M] * T),
    ("a global", "fbt::ct_root:entry { n += 1; } fbt::ct_mid:entry /n > 0/ "
     "{ @ = count(); }", CT, lambda o, a: o.values()[ONE], ALL["ct_mid"]),
    ("probefunc compared in a glob clause",
     'fbt::ct_*:entry /probefunc == "ct_mul"/ { @ = count(); }', CT,
     lambda o, a: o.values()[ONE], ALL["ct_mul"]),
    ("probename as the key", "fbt::ct_mul: { @[probename] = count(); }", CT,
     lambda o, a: o.values(), {"entry": ALL["ct_mul"], "return": ALL["ct_mul"]}),
    ("?: as the key", "fbt::ct_rec:entry { @[args[1] > 1 ? 1 : 0] = count(); }", CT,
     lambda o, a: o.values(), {"1": 3 * M * T, "0": 2 * M * T}),
    ("a cast", "fbt::ct_rec:entry { @[(uint8_t)(args[1] + 254)] = count(); }", CT,
     lambda o, a: o.values(), {str((d + 254) & 255): M * T for d in range(D + 1)}),
    ("four keys",
     "fbt::ct_rec:entry { @[args[1], args[1] * 2, args[1] + 1, probefunc] = count(); }",
     CT, lambda o, a: o.values(),
     {(str(d), str(2 * d), str(d + 1), "ct_rec"): M * T for d in range(D + 1)}),
    ("printf", 'fbt::ct_root:entry { printf("root %u depth %u\\n", args[1], args[2]); }',
     CT, lambda o, a: sorted(o.printed),
     sorted(f"root {i} depth {D}" for i in range(M) for _ in range(T))),
    ("printf of probefunc and probename",
     'fbt::ct_mul:, fbt::ct_root:entry { printf("%s:%s", probefunc, probename); }', CT,
     lambda o, a: Counter(o.printed),
     Counter({"ct_mul:entry": ALL["ct_mul"], "ct_mul:return": ALL["ct_mul"],
              "ct_root:entry": ALL["ct_root"]})),
    ("trace()", "fbt::fib:entry /arg0 == 10/ { trace(arg0); }", FIB,
     lambda o, a: o.printed, ["10"]),
    ("several printfs in one clause, in program order",
     'fbt::ct_root:entry { printf("i %u", args[1]); printf("d %u", args[2]); '
     "trace(tid > 0); }", CT,
     lambda o, a: sorted(tuple(o.printed[k:k + 3]) for k in range(0, len(o.printed), 3)),
     sorted((f"i {i}", f"d {D}", "1") for i in range(M) for _ in range(T))),
    ("printfs of two clauses at one probe, in script order",
     'fbt::ct_mul:entry { printf("x"); } fbt::ct_mul:entry { printf("y"); }', CT,
     lambda o, a: o.printed, ["x", "y"] * ALL["ct_mul"]),
    ("a probe whose every predicate is false is not armed",
     'fbt::ct_*:entry /probefunc == "ct_mul" || probefunc == "ct_add"/ '
     "{ @[probefunc] = count(); }", CT,
     lambda o, a: (o.values(), sorted({p.function for p in o.probes.values()})),
     ({"ct_add": ALL["ct_add"], "ct_mul": ALL["ct_mul"]}, ["ct_add", "ct_mul"])),
    ("exit() stops the counting", "fbt::ct_add:entry { @ = count(); exit(0); }", CT,
     lambda o, a: (1 <= o.values()[ONE] <= 4, o.exit_status), (True, 0)),
    ("END prints globals the probes counted",
     "fbt::ct_add:entry { total += 1; } fbt::ct_mul:entry { m++; } "
     'END { printf("%d %d %d %u\\n", total, m, m - total, (uint8_t)(m * 5)); }', CT,
     lambda o, a: o.printed,
     [f"{ALL['ct_add']} {ALL['ct_mul']} {ALL['ct_mul'] - ALL['ct_add']} "
      f"{ALL['ct_mul'] * 5 & 255}\n"]),
    ("top-N with trunc", "fbt::ct_*:entry { @[probefunc] = count(); } "
     "END { trunc(@, 2); }", CT, lambda o, a: o.values(),
     {"ct_add": ALL["ct_add"], "ct_rec": ALL["ct_rec"]}),
    ("clear", "fbt::ct_mul:entry { @[probefunc] = count(); } END { clear(@); }", CT,
     lambda o, a: o.values(), {"ct_mul": 0}),
    ("a sum of uint32 past 2^32, exact",
     "fbt::ct_mul:entry { @ = sum(args[2] + 0xf0000000); }", CT,
     lambda o, a: o.values()[ONE], ALL["ct_mul"] * (3 + 0xf0000000)),
    ("caller", "fbt::ct_add:entry { @[caller] = count(); }", CT, _callers,
     {"ct_mid": 2 * M * T, "ct_rec": D * M * T}),
    ("two probes in one clause",
     "fbt::ct_add:entry, fbt::ct_mul:entry { @[probefunc] = count(); }", CT,
     lambda o, a: o.values(), {"ct_add": ALL["ct_add"], "ct_mul": ALL["ct_mul"]}),
    ("a char * argument compared with strings in the guest",
     'fbt::thread_create:entry { @[args[0] == "calltree", args[0] != "calltre", '
     'args[0] == "calltreecalltree", args[0] == ""] = count(); }', CT,
     lambda o, a: o.values(), {("1", "1", "0", "0"): T}),
    ("an instruction probe", "insn::ct_mul+0 { @[probename] = count(); }", CT,
     lambda o, a: o.values(), {"insn": ALL["ct_mul"]}),
]

def _example(name: str) -> str:
    return (REPO / "bench" / "scripts" / name).read_text()


# bench/scripts/*.d, run as the table runs: the same ground truth.
ONE_LINERS += [
    ("example count.d", _example("count.d"), CT,
     lambda o, a: {k: v for k, v in o.values("calls").items() if k in ALL}, ALL),
    ("example quantize.d", _example("quantize.d"), FIB,
     lambda o, a: o.values("arg0")[ONE],
     {b: sum(n for k, n in FC.items() if bucket_of(k) == b)
      for b in {bucket_of(k) for k in FC}}),
    ("example predicate.d", _example("predicate.d"), CT,
     lambda o, a: (sorted(o.values("bottoms").values()), o.values("by_depth"),
                   o.values("levels")[ONE]),
     ([M] * T, {str(d): M * T for d in range(1, D + 1)},
      {d + 1: M * T for d in range(1, D + 1)})),
    ("example latency.d", _example("latency.d"), CT,
     lambda o, a: {k: sum(v.values()) for k, v in o.values("ns").items()},
     {f: ALL[f] for f in ("ct_mid", "ct_add", "ct_mul")}),
    ("example printf.d", _example("printf.d"), CT,
     lambda o, a: sorted(ln.split(": ", 1)[1] for ln in o.printed),
     sorted(f"iteration {i}, depth {D}" for i in range(M) for _ in range(T))),
    ("example args.d", _example("args.d"), CT,
     lambda o, a: [ln.split("string=")[1] for ln in o.printed],
     ["'calltree'"] * T),
    ("example dp_null.d", _example("dp_null.d"), FIB,
     lambda o, a: (o.compiled.aggs, o.printed), ({}, [])),
]

_outcomes: dict = {}


def outcomes(name: str, built) -> dict:
    """Every one-liner's outcome on arch, from one boot."""
    if name not in _outcomes:
        built(name)
        a = arches.get(name)
        outs = run_scripts(a, [(s, line) for _, s, line, _, _ in ONE_LINERS],
                           smp=min(2, a.max_smp), label="lang-table")
        _outcomes[name] = dict(zip((i for i, *_ in ONE_LINERS), outs))
    return _outcomes[name]


# tests/workloads/typed.c: ty_all(box, -193, 4000000000, TY_BLUE, "typed", -7,
# 200) once; its 7th argument is passed on the stack on sparc64 (and is past
# the 6 words an i386 record carries).
TYPED = [
    ("every typed argument, the string too",
     'fbt::ty_all:entry { printf("%d %u %d %s %d %u\\n", args[1], args[2], args[3], '
     "args[4], args[5], args[6]); }",
     lambda o: o.printed, ["-193 4000000000 -2 typed -7 200"]),
    ("an enum key by name", "fbt::ty_all:entry { @[args[3]] = count(); }",
     lambda o: o.values(), {"TY_BLUE": 1}),
    ("the 7th argument, stack-passed", "fbt::ty_all:entry { @[arg6] = count(); }",
     lambda o: o.values(), {"200": 1}),
    ("a predicate on a signed argument, an unsigned sum past 2^31",
     "fbt::ty_all:entry /args[1] < 0/ { @ = sum(args[2]); }",
     lambda o: o.values()[ONE], 4000000000),
    ("a string argument compared in a predicate",
     'fbt::ty_all:entry /args[4] == "typed"/ { @[args[4] != "typed!", '
     'args[4] == "type"] = count(); }',
     lambda o: o.values(), {("1", "0"): 1}),
    ("a signed return value", "fbt::ty_all:return { @[retval] = count(); }",
     lambda o: o.values(), {"-200": 1}),
    # ty_wide(-1, 5000000001, 1): 64-bit parameters, two stack words each on
    # i386 (arg64), one register on sparc64; the VM's word is 64 bits on both
    ("64-bit arguments printed exactly",
     'fbt::ty_wide:entry { printf("%d %u %d\\n", args[0], args[1], args[1] * 3); }',
     lambda o: o.printed, ["-1 5000000001 15000000003"]),
    # C's conversions: long long against unsigned long long is unsigned
    ("a sum of a 64-bit argument, a signed compare of 64-bit values",
     "fbt::ty_wide:entry /args[0] < 0 && args[0] < (int64_t)args[1] && "
     "args[1] > 4294967296 && !(args[0] < args[1])/ "
     "{ @ = sum(args[1] + args[1]); }",
     lambda o: o.values()[ONE], 10000000002),
    ("the same cut to 32 bits: what a 32-bit word would have kept",
     "fbt::ty_wide:entry { @ = sum((uint32_t)args[1]); }",
     lambda o: o.values()[ONE], 5000000001 - 2**32),
    ("a global and self-> past 2^32, a 64-bit constant",
     "fbt::ty_wide:entry { self->w = args[1]; g = args[1] * 3; } "
     "fbt::ty_wide:return /self->w == 5000000001 && g == 15000000003/ "
     "{ @[self->w] = count(); } END { printf(\"%d\\n\", g); }",
     lambda o: (o.values(), o.printed), ({"5000000001": 1}, ["15000000003\n"])),
    ("a signed division of a 64-bit value, toward 0",
     "fbt::ty_wide:entry { @ = sum((args[0] - 4000000000) / 2); }",
     lambda o: o.values()[ONE], -2000000000),
]
_typed: dict = {}


@pytest.mark.parametrize("case", TYPED, ids=[c[0] for c in TYPED])
def test_typed_arguments(arch, built, case):
    if arch not in _typed:
        built(arch)
        a = arches.get(arch)
        _typed[arch] = dict(zip((c[0] for c in TYPED), run_scripts(
            a, [(c[1], "typed") for c in TYPED], smp=1, label="lang-typed",
            workload=REPO / "tests" / "workloads" / "typed.c")))
    ident, script, got, truth = case
    o = _typed[arch][ident]
    assert o.reply.ok, o.reply.message
    assert got(o) == truth, script


def test_the_cli_runs_check_mode_and_writes_json(arch, built, tmp_path, capsys):
    """`trace` as a person types it: check mode re-runs every emulation,
    the verdict line closes the output, --json holds the table."""
    from bench import cli
    import json
    built(arch)
    out = tmp_path / "aggs.json"
    rc = cli.main(["trace", "--arch", arch, "--check", "--json", str(out), "-n",
                   "fbt::ct_mul:entry { @[probefunc] = count(); }",
                   "--run", CT])
    text = capsys.readouterr().out
    assert rc == 0, text
    assert " 0 mismatches" in text and "PROBLEM" not in text, text
    assert text.rstrip().splitlines()[-1].startswith(f"traced={ALL['ct_mul']} ")
    assert json.loads(out.read_text())["@"]["rows"][0]["value"] == ALL["ct_mul"]


def test_exit_ends_the_run_at_once(arch, built, capsys):
    """exit(3) after K firings of ct_add ends the run there: the workload,
    a hundred million iterations (half an hour of TCG), is stopped with
    the guest within seconds, the table holds K, END prints the global
    that counted, and `trace` exits with 3. --timeout 120 makes a run
    that missed the exit fail rather than hang."""
    from bench import cli
    import time
    built(arch)
    k = 50
    t0 = time.monotonic()
    rc = cli.main(["trace", "--arch", arch, "--timeout", "120", "-q", "-n",
                   "fbt::ct_add:entry { @[probefunc] = count(); n++; } "
                   f"fbt::ct_add:entry /n >= {k}/ {{ exit(3); }} "
                   'END { printf("n=%d\\n", n); }',
                   "--run", "calltree threads=1 iters=100000000 ref=0"])
    took = time.monotonic() - t0
    text = capsys.readouterr().out
    assert rc == 3, text
    assert took < 60, (took, text)
    assert f"n={k}\n" in text and re.search(rf"\n  ct_add +{k}\n", text), text
    assert "exit(3): the run ended there" in text


def test_the_table_is_big_enough():
    assert len(ONE_LINERS) >= 30
    assert len({i for i, *_ in ONE_LINERS}) == len(ONE_LINERS)


@pytest.mark.parametrize("case", ONE_LINERS, ids=[c[0] for c in ONE_LINERS])
def test_one_liner(arch, built, case):
    ident, script, line, got, truth = case
    o = outcomes(arch, built)[ident]
    assert o.reply.ok, o.reply.message
    assert not o.capture.agg_dropped or not sum(o.capture.agg_dropped.values())
    assert o.capture.tls_dropped == 0
    assert got(o, arches.get(arch)) == truth, script


def test_a_wrong_truth_is_caught(arch, built):
    ident, script, line, got, truth = ONE_LINERS[0]
    o = outcomes(arch, built)[ident]
    wrong = dict(truth, ct_add=truth["ct_add"] + 1)
    assert got(o, arches.get(arch)) != wrong

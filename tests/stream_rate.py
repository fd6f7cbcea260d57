"""How many records a CPU-second the streaming verifier walks, on a
synthetic stream shaped like calltree's (tests/test_stream.py's workload:
entry and return pairs of random depth, 8 threads on 4 CPUs, a SWITCH
before every call), fed FEED_FRAMES frames at a time as the lossless stress
feeds it from its spool. Not a test (pytest does not collect it): run
    /usr/bin/python3 tests/stream_rate.py --records 1000000 [--tree DIR]
    [--profile]
--tree measures another checkout's bench/ (`git archive main bench | tar
-x -C DIR`) on the same frames, so that two versions can be timed in turn
on a loaded host; the frames are built once and kept in --cache. It
prints records, CPU seconds and records per CPU-second; --profile prints
cProfile's top functions instead.
"""

import argparse
import os
import pickle
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def build(records: int, path: str) -> None:
    sys.path.insert(0, os.path.dirname(HERE))
    sys.path.insert(0, HERE)
    from test_stream import frames_of, workload
    # About 6 records a call and thread: entries, returns, one SWITCH.
    per_cpu, expect = workload(cpus=4, threads_per_cpu=2, calls=max(1, records // 48))
    fl = frames_of(per_cpu, expect)
    with open(path, "wb") as f:
        pickle.dump([(fr.type, fr.seq, bytes(fr.payload)) for fr in fl], f)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--tree", default=os.path.dirname(HERE))
    ap.add_argument("--cache", default="/tmp/trapbench-stream-rate")
    ap.add_argument("--profile", action="store_true")
    a = ap.parse_args()
    path = f"{a.cache}-{a.records}.pickle"
    if not os.path.exists(path):
        build(a.records, path)
    with open(path, "rb") as f:
        raw = pickle.load(f)
    sys.path.insert(0, os.path.abspath(a.tree))
    sys.path.insert(0, HERE)
    from bench.trace.stream import StreamVerifier
    from bench.wire.frames import Frame
    from test_stream import ORDER, PROBES, WB
    fl = [Frame(t, s, p, 0) for t, s, p in raw]

    def run():
        sv = StreamVerifier(PROBES, ORDER, WB, 4)
        for i in range(0, len(fl), 32):
            sv.feed(fl[i:i + 32])
        return sv, sv.report()

    if a.profile:
        import cProfile
        import pstats
        cProfile.runctx("run()", globals(), {"run": run}, "/tmp/stream_rate.prof")
        pstats.Stats("/tmp/stream_rate.prof").sort_stats("tottime").print_stats(25)
        return
    t0 = time.process_time()
    sv, rep = run()
    secs = time.process_time() - t0
    assert rep.ok, rep.problems
    print(f"{a.tree}: {sv.walked} records, {secs:.2f} CPU-s, "
          f"{sv.walked / secs:,.0f} records/CPU-s")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Scaling efficiency of qkv's data-parallel training: a model, not a measurement.

One update per rank = compute (forward + backward of its micro-batches, measured on one
machine) + the gradient exchange (modelled; no overlap with backward: qkv does not bucket).

  A   = 4 P bytes                     the gradient arena (P float32 parameters)
  B   = 0.9 x line rate               effective bandwidth per link and direction
  a   = 50 us                         per-message latency (TCP over Ethernet)
  c   = A / (8 (R-1)) in [64 KiB, 1 MiB]   the ordered chain's chunk (mpi_exchange.h)

  ordered:   T = A/B + 2 (R-1)(c/B + a)          the forward chain and the backward one,
                                                 pipelined in chunks, on both directions
                                                 of the links at once
  allreduce: T = 2 (R-1)/R A/B + 2 (R-1) a       ring allreduce
  efficiency E(R) = t_c / (t_c + T(R))           t_c: compute seconds per update and rank

usage: bench/scaling_model.py NAME:PARAMS:SECONDS_PER_UPDATE ...
e.g.   bench/scaling_model.py transformer:7578624:1.54 rnn:4216320:0.77
"""
import sys

LATENCY = 50e-6


def chunk(a_bytes, r):
    return min(max(a_bytes / (8 * (r - 1)), 64 << 10), 1 << 20)


def ordered(a_bytes, r, bw):
    if r == 1:
        return 0.0
    return a_bytes / bw + 2 * (r - 1) * (chunk(a_bytes, r) / bw + LATENCY)


def allreduce(a_bytes, r, bw):
    return 0.0 if r == 1 else 2 * (r - 1) / r * a_bytes / bw + 2 * (r - 1) * LATENCY


def main(args):
    if not args or any(a in ("-h", "--help") for a in args):
        print(__doc__)
        return 0 if args else 2
    print("| model | link | machines | ordered exchange ms | ordered E | allreduce ms | allreduce E |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for spec in args:
        name, params, seconds = spec.split(":")
        a_bytes, t_c = 4 * int(params), float(seconds)
        for gbe in (10, 25):
            bw = 0.9 * gbe * 1e9 / 8
            for r in (4, 16, 64):
                t_o, t_a = ordered(a_bytes, r, bw), allreduce(a_bytes, r, bw)
                print(f"| {name} | {gbe} GbE | {r} | {t_o * 1e3:.0f} | {t_c / (t_c + t_o):.1%} "
                      f"| {t_a * 1e3:.0f} | {t_c / (t_c + t_a):.1%} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

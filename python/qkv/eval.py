"""BLEU and chrF exactly as sacreBLEU's defaults compute them (qkv's own implementation,
the one ``qkv eval`` runs), and both per source-length bucket.

    s = qkv.eval.bleu(["the cat sat"], ["the cat sat down"])
    s.score, s.precisions, s.bp, s.signature; print(s)   # the line `qkv eval` prints
"""

from ._qkv.eval import (
    BleuScore,
    ChrfScore,
    ConfidenceInterval,
    LengthBucket,
    bleu,
    by_length,
    chrf,
    format_by_length,
)

__all__ = ["BleuScore", "ChrfScore", "ConfidenceInterval", "LengthBucket", "bleu",
           "by_length", "chrf", "format_by_length"]

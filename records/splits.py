"""The split names of the Examples ImageExampleGen writes."""

TRAIN = 'train'
# Carved out of train (--validation-percent), or a folder of its own.
VALIDATION = 'validation'
EVAL = 'eval'
# Of a window of spans, the older spans' eval: the newest span's alone is
# judged by default (docs/schedule.md).
EARLIER_EVAL = 'earlier_eval'

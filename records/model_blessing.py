"""What the Evaluator records on its ModelBlessing: the metric the accuracy
threshold applies to, the threshold, and why that one; whether its baseline
was the candidate itself.

The rule that sets them: components/evaluator/blessing_rule.py.
"""

# The metric's Keras class name (modules/accuracy.py computes it).
ACCURACY_METRIC = 'SparseCategoricalAccuracy'
# Custom properties of the ModelBlessing.
ACCURACY_THRESHOLD_PROPERTY = 'accuracy_threshold'
THRESHOLD_REASON_PROPERTY = 'accuracy_threshold_reason'
# 1 when the baseline was the candidate model itself, which was then
# evaluated alone (components/evaluator/baseline_evaluator.py).
BASELINE_IS_CANDIDATE_PROPERTY = 'baseline_is_candidate'

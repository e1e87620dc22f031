"""The Evaluator's accuracy, Keras's SparseCategoricalAccuracy run as written.

TFMA updates it eagerly, and AutoGraph would convert `update_state` and all
it calls, costing every Evaluator run seconds (see model.compile_for_training).
"""

import tensorflow as tf
import tf_keras as keras


class SparseCategoricalAccuracy(keras.metrics.SparseCategoricalAccuracy):
  """Keras's metric, of the same name and result."""

  @tf.autograph.experimental.do_not_convert
  def update_state(self, y_true, y_pred, sample_weight=None):
    """Updates the metric as Keras's does, without AutoGraph."""
    return super().update_state(y_true, y_pred, sample_weight=sample_weight)

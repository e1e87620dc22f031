"""Warm start: the Trainer starts from the served model's weights.

`Executor`, TFX's Trainer executor, hands run_fn the served model's path;
`start` decides whether its weights fit (network, geometry, classes) and
says why not. Why and how: docs/training.md, "Warm start".
"""

import dataclasses
import os
from typing import Any, Dict, List, Optional

import numpy as np
import tensorflow as tf
import tf_keras as keras
from tfx import types
from tfx.components.trainer import executor as trainer_executor
from tfx.types import artifact_utils
from tfx.types import standard_component_specs
from tfx.utils import json_utils
from tfx.utils import path_utils

from modules.training import model as model_lib
from modules.training.config import ModelConfig
from records import features
from records import serving_model

# custom_config's entry naming the served model's path under the serving
# directory (Executor sets it; the base_model run_fn gets is a copy of it).
SERVED_FROM_KEY = 'served_from'


@dataclasses.dataclass(frozen=True)
class Start:
  """Where training starts, and why.

  `layer_weights` are the served model's weights layer by layer, None from
  scratch. `served_from` is the served model they are from.
  """
  layer_weights: Optional[List[List[np.ndarray]]]
  served_from: str
  why: str
  # The served model's classes and this run's, to grow the classifier.
  served_names: List[str] = dataclasses.field(default_factory=list)
  class_names: List[str] = dataclasses.field(default_factory=list)

  @property
  def warm(self) -> bool:
    """Whether training starts from the served model's weights."""
    return self.layer_weights is not None

  def apply(self, model: keras.Model) -> None:
    """Puts the served weights in `model`, built for `class_names`.

    Layers are matched in order, as some names are Keras's numbered ones. A
    class added keeps `model`'s own newly initialised column.
    """
    for weights, layer in zip(self.layer_weights, model.layers, strict=True):
      if layer.name == model_lib.LOGITS_LAYER:
        weights = grown_classifier(weights, layer.get_weights(),
                                   self.served_names, self.class_names)
      layer.set_weights(weights)


def cold(why: str) -> Start:
  """Returns a start from scratch, for the reason `why`."""
  return Start(layer_weights=None, served_from='', why=why)


def start(base_model: Optional[str], served_from: str, architecture: str,
          geometry: features.ImageGeometry, class_names: List[str],
          config: ModelConfig) -> Start:
  """Returns where training starts, from the served model if it fits.

  Args:
    base_model: the served model's SavedModel directory, None or empty if
      nothing is served.
    served_from: the served model's path, to name it (default: base_model).
    architecture: the network this run trains.
    geometry: the images this run trains on.
    class_names: this run's classes.
    config: this run's model settings.
  """
  if not base_model or not tf.io.gfile.exists(
      os.path.join(base_model, serving_model.SAVED_MODEL_FILE)):
    return cold('nothing is served yet')
  if config.backbone:
    return cold('--backbone starts from its pretrained weights')
  extra = os.path.join(base_model, serving_model.EXTRA_DIR)
  try:
    served = serving_model.read_training_plan(base_model)
  except FileNotFoundError:
    return cold('the served model has no '
                f'{os.path.join(extra, serving_model.TRAINING_PLAN_FILE)}: its '
                'network is unknown')
  if served.get('architecture') != architecture:
    return cold(f'the served model is a {served.get("architecture")}, this '
                f'run trains a {architecture}')
  if served.get('geometry') != str(geometry):
    return cold(f'the served model takes {served.get("geometry")} images, '
                f'these are {geometry}')
  names_file = os.path.join(extra, features.CLASS_NAMES_FILE)
  if not tf.io.gfile.exists(names_file):
    return cold(f'the served model has no {names_file}: its classes are '
                'unknown')
  served_names = features.read_class_names(names_file)
  gone = [name for name in served_names if name not in class_names]
  if gone:
    return cold(f'the served model knows classes these Examples do not have '
                f'({", ".join(gone)}): its classifier cannot grow into this '
                'one')
  # Built as the served model was, and its weights read by object path
  # (the SavedModel's variables are the Keras model's checkpoint).
  old = model_lib.build(architecture, geometry, len(served_names), config)
  try:
    old.load_weights(os.path.join(base_model, 'variables', 'variables')
                     ).assert_existing_objects_matched().expect_partial()
  except (ValueError, AssertionError) as e:
    return cold('the served model\'s weights do not fit this network: ' +
                str(e).splitlines()[0])
  added = [name for name in class_names if name not in served_names]
  why = (f'classes added: {", ".join(added)}' if added
         else 'the same network, geometry and classes')
  return Start(layer_weights=[layer.get_weights() for layer in old.layers],
               served_from=served_from or base_model, why=why,
               served_names=served_names, class_names=list(class_names))


def grown_classifier(served: List[np.ndarray], fresh: List[np.ndarray],
                     served_names: List[str],
                     class_names: List[str]) -> List[np.ndarray]:
  """Returns the classifier's [kernel, bias] for `class_names`.

  Each served class's column comes from `served`, moved to its index in
  `class_names`. A new class's comes from `fresh`.

  Args:
    served: the served model's classifier, [kernel, bias].
    fresh: a newly initialised classifier for `class_names`, [kernel, bias].
    served_names: the served model's classes, in its columns' order.
    class_names: this run's classes, each of `served_names` among them.
  """
  kernel, bias = (np.array(w) for w in fresh)
  for old_index, name in enumerate(served_names):
    new_index = class_names.index(name)
    kernel[:, new_index] = served[0][:, old_index]
    bias[new_index] = served[1][old_index]
  return [kernel, bias]


def started_from(serving_model_dir: str) -> str:
  """Returns where the model in `serving_model_dir` started, as its plan says.

  That is the served model's path, or '' when it trained from scratch.
  """
  return serving_model.read_training_plan(serving_model_dir).get(
      serving_model.WARM_START_FROM, '')


class Executor(trainer_executor.GenericExecutor):
  """TFX's Trainer executor, which also passes on the served model's path.

  It tells run_fn the served model's path, and records where training
  started on the Model artifact.
  """

  def Do(self, input_dict: Dict[str, List[types.Artifact]],
         output_dict: Dict[str, List[types.Artifact]],
         exec_properties: Dict[str, Any]) -> None:
    """Trains as TFX's Trainer does, then records where training started."""
    base_model = input_dict.get(standard_component_specs.BASE_MODEL_KEY)
    served_from = ''
    if base_model:
      artifact = artifact_utils.get_single_instance(base_model)
      if artifact.has_custom_property(serving_model.SERVED_FROM_PROPERTY):
        served_from = artifact.get_string_custom_property(
            serving_model.SERVED_FROM_PROPERTY)
    key = standard_component_specs.CUSTOM_CONFIG_KEY
    custom_config = json_utils.loads(exec_properties.get(key) or 'null') or {}
    custom_config[SERVED_FROM_KEY] = served_from
    super().Do(input_dict, output_dict,
               {**exec_properties, key: json_utils.dumps(custom_config)})
    model = artifact_utils.get_single_instance(
        output_dict[standard_component_specs.MODEL_KEY])
    model.set_string_custom_property(
        serving_model.WARM_START_FROM,
        started_from(path_utils.serving_model_dir(model.uri)))

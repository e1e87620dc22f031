"""Every knob of the pipeline, in one place.

local_runner.py turns its flags into these values; kubeflow/ reads the same
ones, so a DAG tuned locally compiles for Kubeflow unchanged.
"""

import os

from pipeline import features

PIPELINE_NAME = 'image_classifier'

# Where the project keeps what it downloads (git ignores it) and writes runs.
PROJECT_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MNIST_DIR = os.path.join(PROJECT_DIR, 'data', 'downloads', 'mnist')
OUTPUT_DIR = os.path.join(PROJECT_DIR, 'outputs')

# Layout of an output directory.
PIPELINE_ROOT_NAME = 'pipeline'
METADATA_DB_NAME = 'metadata.db'
SERVING_MODEL_DIR_NAME = 'serving_model'

# ExampleGen.
INPUT_FORMAT = 'idx'  # or 'images'
# Geometry that image folders are converted to (IDX files carry their own).
IMAGE_GEOMETRY = features.MNIST_GEOMETRY
# Output files per split: enough for the Trainer to interleave reads.
NUM_SHARDS = 16

# Class names by dataset; `--class-names` takes one of these keys.
CLASS_NAME_PRESETS = {
    'mnist': [str(digit) for digit in range(10)],
    'fashion-mnist': ['T-shirt/top', 'Trouser', 'Pullover', 'Dress', 'Coat',
                      'Sandal', 'Shirt', 'Sneaker', 'Bag', 'Ankle boot'],
}

# A hand-curated schema for MNIST-format data (28x28 grey images, labels
# 0..9); `--schema` uses it instead of the one SchemaGen infers.
MNIST_SCHEMA = os.path.join(PROJECT_DIR, 'pipeline', 'schema', 'mnist',
                            'schema.pbtxt')

# Beam: the DirectRunner with one worker process per core. Extra
# `--beam-args` come after these, so they override them (Beam keeps the last
# value of a flag), e.g. `--runner=FlinkRunner --flink_master=...`.
BEAM_PIPELINE_ARGS = (
    '--direct_running_mode=multi_processing',
    '--direct_num_workers=0',  # 0: one per CPU core.
)

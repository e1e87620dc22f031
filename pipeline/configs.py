"""Every knob of the pipeline, in one place.

local_runner.py turns its flags into these values; kubeflow/ reads the same
ones, so a DAG tuned locally compiles for Kubeflow unchanged.
"""

import os

from records import features

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
# Data in drops, one folder per span (e.g. 'span-{SPAN}'): None reads
# --data-dir itself.
SPAN_DIR_PATTERN = None
# Image folders: unreadable images stop the run, unless skipped (and listed).
SKIP_BAD_IMAGES = False

# Known datasets (`--dataset NAME`): their class names and the accuracy a
# model must reach on them to be pushed.
DATASETS = {
    'mnist': dict(
        class_names=[str(digit) for digit in range(10)],
        accuracy_threshold=0.99),
    'fashion-mnist': dict(
        class_names=['T-shirt/top', 'Trouser', 'Pullover', 'Dress', 'Coat',
                     'Sandal', 'Shirt', 'Sneaker', 'Bag', 'Ankle boot'],
        accuracy_threshold=0.91),
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
    # Imported by each worker at its start: it releases tf.Transform's
    # graph before the worker's interpreter shuts down (see there why).
    '--beam_plugins=pipeline.beam_worker',
)
# local_runner.py adds: the workers need the project's code, and a remote
# runner gets it from this setup.py (the DirectRunner ignores the flag).
# Without some dependency flag TFX builds an sdist of TFX itself in every
# Beam component's executor (~2.5 s each).
LOCAL_BEAM_PIPELINE_ARGS = (
    '--setup_file=' + os.path.join(PROJECT_DIR, 'setup.py'),
)
# ExampleGen runs on one process: its work on IDX files (numpy, gzip) is
# lighter than starting worker processes that each import TensorFlow (full
# MNIST on 2 cores: 1.1 s in memory, 11.8 s multi-processing). These come
# after BEAM_PIPELINE_ARGS and before --beam-args.
EXAMPLE_GEN_BEAM_PIPELINE_ARGS = ('--direct_running_mode=in_memory',
                                  '--direct_num_workers=1')

# Transform and Trainer: module paths (the package is installed, locally and
# in the Kubeflow image, so no module files are copied around).
PREPROCESSING_FN = 'modules.transform.preprocessing_fn'
RUN_FN = 'modules.trainer.run_fn'

# Training. EPOCHS passes over the training split; TRAIN_STEPS, when set,
# trains that many steps instead (tests use it for tiny runs).
EPOCHS = 8
BATCH_SIZE = 128  # Per GPU; one batch on CPU.
LEARNING_RATE = 1e-3
LEARNING_RATE_DECAY = 0.75  # Per epoch.
SHUFFLE_BUFFER = 60_000  # Records; MNIST's whole training split.
MIXED_PRECISION = True  # float16 compute on GPUs (never on CPU).
TRAIN_STEPS = None
EVAL_STEPS = None
# The classic MNIST CNN.
CONV_FILTERS = (32, 64)
KERNEL_SIZE = 5
DENSE_UNITS = 1024
DROPOUT = 0.4

# Evaluator: a model is blessed (and pushed) only with at least this
# sparse categorical accuracy on the eval split, and no worse than the last
# blessed model. A --dataset preset brings its own.
ACCURACY_THRESHOLD = DATASETS['mnist']['accuracy_threshold']


# Kubeflow (kubeflow/kubeflow_runner.py). KFP pipeline names allow only
# [a-z0-9-], so the DAG is compiled under this name.
KUBEFLOW_PIPELINE_NAME = PIPELINE_NAME.replace('_', '-')
# URI schemes the containers can read and write (TensorFlow's gfile and Beam):
# Google Cloud Storage, and S3 or MinIO in an image built with WITH_S3=1.
OBJECT_STORE_SCHEMES = ('gs://', 's3://')
# Where kubeflow/Dockerfile puts the project inside the image (its WORKDIR).
IMAGE_PROJECT_DIR = '/pipeline'
# Accelerator requested by `--gpu N`: the Kubernetes resource name on
# Kubeflow; Vertex AI wants a machine accelerator type (NVIDIA_TESLA_T4...).
GPU_TYPE = 'nvidia.com/gpu'
# The compiled DAG's runtime parameter: where ExampleGen reads raw data, so a
# scheduled run can point at a new drop without recompiling.
DATA_ROOT_PARAMETER = 'data_root'

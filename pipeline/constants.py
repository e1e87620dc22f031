"""The project's fixed names, paths and Beam settings.

Nothing here is a knob. Knobs live in pipeline/knobs.py, each with its
default and flag.
"""

import os

PIPELINE_NAME = 'image_classifier'

# Where the project keeps what it downloads (git ignores it) and writes runs.
PROJECT_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MNIST_DIR = os.path.join(PROJECT_DIR, 'data', 'downloads', 'mnist')
OUTPUT_DIR = os.path.join(PROJECT_DIR, 'outputs')

# Layout of an output directory.
PIPELINE_ROOT_NAME = 'pipeline'
METADATA_DB_NAME = 'metadata.db'
SERVING_MODEL_DIR_NAME = 'serving_model'

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
# Beam component's executor and leaves it in a temporary directory.
# Beam pickles the DoFns of each component's pipeline with cloudpickle
# rather than dill, its default: dill pickles in pure Python and resets the
# level of its logger at every object, which clears the cache of every
# logger of the process (TensorFlow's, Beam's, TFX's...). Only the Beam
# components' start-up changes (BENCHMARKS.md, "MNIST time to accuracy",
# its notes on the fixed costs).
LOCAL_BEAM_PIPELINE_ARGS = (
    '--setup_file=' + os.path.join(PROJECT_DIR, 'setup.py'),
    '--pickle_library=cloudpickle',
)

# Transform, Trainer and Tuner: module paths (the package is installed, locally and
# in the Kubeflow image, so no module files are copied around).
PREPROCESSING_FN = 'modules.transform.preprocessing_fn'
RUN_FN = 'modules.trainer.run_fn'
# The Trainer's with --trainer-workers N on this machine: it starts the workers.
LOCAL_WORKERS_RUN_FN = 'modules.local_workers.run_fn'
TUNER_FN = 'modules.tuner.tuner_fn'
# LabelCheck's models of the training split's folds.
CROSS_FIT_FN = 'modules.cross_fit.cross_fit'

# Kubeflow (kubeflow/kubeflow_runner.py). KFP pipeline names allow only
# [a-z0-9-], so the DAG is compiled under this name.
KUBEFLOW_PIPELINE_NAME = PIPELINE_NAME.replace('_', '-')
# URI schemes the containers can read and write (TensorFlow's gfile and Beam):
# Google Cloud Storage, and S3 or MinIO in an image built with WITH_S3=1.
OBJECT_STORE_SCHEMES = ('gs://', 's3://')
# Where kubeflow/Dockerfile puts the project inside the image (its WORKDIR).
IMAGE_PROJECT_DIR = '/pipeline'
# kubeflow_runner.py puts this first in every Beam component's args, as
# local_runner.py puts LOCAL_BEAM_PIPELINE_ARGS: a remote runner (Dataflow)
# gets the project's code from the image's setup.py, and TFX builds no sdist
# of itself.
IMAGE_BEAM_PIPELINE_ARGS = ('--setup_file=' + IMAGE_PROJECT_DIR + '/setup.py',)
# The compiled DAG's runtime parameter: where ExampleGen reads raw data, so a
# scheduled run can point at a new drop without recompiling.
DATA_ROOT_PARAMETER = 'data_root'

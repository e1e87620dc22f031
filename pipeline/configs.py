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
# How records hold the pixels: 'raw' uint8 (a byte copy to read), or a
# 'png' (lossless) or 'jpeg' (lossy) file, decoded by the Transform graph in
# the input_fn; 'auto': png for images of at least PNG_MIN_PIXELS pixels
# (height x width), raw below. Raw at every size, by measurement
# (BENCHMARKS.md, "Encodings": the shapes dataset, 2 cores): PNG records
# are 0.79x (96x96x3) and 0.82x (224x224x3) the bytes of gzipped raw ones
# but read 1.5x and 2-4x slower (a decode per image per epoch); JPEG is
# 0.2x the bytes and about as fast to read, but lossy, which a pipeline
# whose records are the data should not be by default. png (or auto) is
# for input bound by its storage's bandwidth, not its CPU.
IMAGE_ENCODING = 'raw'
PNG_MIN_PIXELS = 128 * 128
# Output files per split: enough for the Trainer to interleave reads.
NUM_SHARDS = 16
# Data in drops, one folder per span (e.g. 'span-{SPAN}'): None reads
# --data-dir itself.
SPAN_DIR_PATTERN = None
# Image folders: unreadable images stop the run, unless skipped (and listed).
SKIP_BAD_IMAGES = False

# Known datasets (`--dataset NAME`): their class names, the accuracy a
# model must reach on them to be pushed, and, where the budget's 3 epochs
# for 60,000 images do not reach it, their epochs (`--epochs` overrides).
# Fashion-MNIST at 3 epochs: 90.97% validation accuracy, not pushed; at 8:
# 92.86% on its test set, pushed (benchmarks/results/full_run-fashion-mnist.md,
# 7.1 min on 2 cores).
DATASETS = {
    'mnist': dict(
        class_names=[str(digit) for digit in range(10)],
        accuracy_threshold=0.99),
    'fashion-mnist': dict(
        class_names=['T-shirt/top', 'Trouser', 'Pullover', 'Dress', 'Coat',
                     'Sandal', 'Shirt', 'Sneaker', 'Bag', 'Ankle boot'],
        accuracy_threshold=0.91,
        epochs=8),
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
# Beam component's executor (~2.5 s each) and leaves it in a temporary
# directory (~52 MB each; found filling a developer's disk).
LOCAL_BEAM_PIPELINE_ARGS = (
    '--setup_file=' + os.path.join(PROJECT_DIR, 'setup.py'),
)
# ExampleGen's Beam execution, by the size of its input (pipeline/scale.py;
# bytes of pixels in IDX files, bytes of image files in folders): in one
# process below EXAMPLE_GEN_MULTI_PROCESS_MIN_BYTES, a worker per core
# from there on. Either way memory stays bounded (each shard is written by
# the worker that converts it); the choice is speed. Measured with the
# executor on scaled MNIST (data/scaled_mnist.py), 2 cores (AMD EPYC)
# shared with other jobs (load ~5): 1x 0.96 s in one process against
# 21.3 s with 2 worker processes (each imports TensorFlow and TFX: ~20 s of
# start-up), 10x 5.8 against 30.6 s, 100x (4.7 GB of pixels) 65.5 against
# 74.8 s: the workers' higher rate (~111,000 against ~92,000 examples/s)
# repays their start-up only from ~11 million images (~9 GB) at that load;
# on idle cores (estimated, not measured: ~10 s of start-up, twice the
# rate) from ~4 million (~3 GB). 5 GB: 100x MNIST still in one process.
EXAMPLE_GEN_MULTI_PROCESS_MIN_BYTES = 5 * 10**9
EXAMPLE_GEN_IN_MEMORY_BEAM_ARGS = ('--direct_running_mode=in_memory',
                                   '--direct_num_workers=1')
EXAMPLE_GEN_MULTI_PROCESS_BEAM_ARGS = ('--direct_running_mode=multi_processing',
                                       '--direct_num_workers=0')

# StatisticsGen: TFDV computes statistics over a sample of each split's
# record batches when the input holds more than
# STATISTICS_SAMPLE_ABOVE_RECORDS records (sample rate
# STATISTICS_SAMPLE_RECORDS / records), over every record below.
# What a sample leaves out: exact counts (TFDV scales them) and rare values,
# which the schema's checks (label and pixel domains) do not need at that
# size. Sampling skips the statistics work on the records left out; the
# records are still read and parsed (TFDV samples after decoding). Below
# 1M nothing is sampled: 10x MNIST (610,000 records) took 147 us per
# record in full against 546 at 1x (worker start-up amortised; 2 shared
# cores, load ~5); its effect at 100x is not measured yet.
STATISTICS_SAMPLE_ABOVE_RECORDS = 1_000_000
STATISTICS_SAMPLE_RECORDS = 500_000
# TFDV's top-k and unique-value statistics from sketches (Misra-Gries and
# KMV, combined per worker) instead of its exact generator, which counts
# every distinct value of every string feature through a GroupByKey: on
# images every `image` value is distinct, and the DirectRunner holds a
# GroupByKey's whole input in the runner process. Measured by counting the
# bytes Beam's runner buffers between stages (12,000 + 2,000 records of
# random 28x28 images, 2 worker processes): the exact generator's Group
# held 9.3 MB for the 12,000 training records (~780 bytes a record, the
# image itself: ~4.7 GB at 100x MNIST unsampled, ~0.4 GB for a 500,000
# record sample); with sketches no buffer above 1 MB. The counts the schema
# needs (label and pixel domains are integers; SchemaGen gives no string
# domain to a feature of mostly distinct values) come out the same. On 10x
# MNIST (610,000 records, AMD EPYC, 2 cores): 18.4 s against 32.2 s, peak
# RSS of the process tree 2.18 GB against 5.84 GB (the runner's 0.88
# against 3.52 GB).
STATISTICS_SKETCH_TOP_K = True

# Transform: no pre- and post-transform statistics (TFX computes both by
# default: TFDV over the raw training split, which StatisticsGen already
# did, and over every split transformed to float images, 4x the raw bytes;
# nothing in the project reads either). Besides the time, the second
# one cannot run in bounded memory on the DirectRunner: the transformed
# records of all splits reach TFDV through a Flatten waiting on a side
# input (the written transform_fn), a stage boundary where Beam's runner
# holds them all. Measured by counting the bytes Beam's runner buffers
# between stages (12,000 + 2,000 records, 2 worker processes):
# 'FlattenTransformedDatasets' held 36.5 MB (2.6 KB a record: ~1.6 GB at
# 10x MNIST, ~16 GB at 100x); without the statistics Transform reads the
# training split once for its analyzers and buffers nothing above 1 MB,
# and took 30.0 s against 38.4 s; the process tree's peak RSS during
# Transform went from 3.17 to 2.54 GB.
# On 10x MNIST (610,000 records, AMD EPYC, 2 cores): 24.9 s against
# 77.4 s, peak RSS of the process tree 2.58 GB against 12.60 GB (the
# runner's 0.88 against 8.89 GB).
TRANSFORM_STATISTICS = False

# Transform and Trainer: module paths (the package is installed, locally and
# in the Kubeflow image, so no module files are copied around).
PREPROCESSING_FN = 'modules.transform.preprocessing_fn'
RUN_FN = 'modules.trainer.run_fn'

# Training. The budget grows with the dataset (modules/training_plan.py):
# EPOCHS = ceil(TRAINING_EXAMPLES / training records) within MIN_EPOCHS..
# MAX_EPOCHS (MNIST's 60,000: 3 epochs; 3,000 images: 60) unless EPOCHS is
# set. Measured on MNIST (BENCHMARKS.md, "MNIST time to accuracy", side by
# side on a quiet machine): 3 epochs gave 99.34% on the official test set
# in 47% of the Trainer wall time (40% of its CPU time) of the 8 epochs
# before (99.44%); an earlier run on a busy machine: 3 epochs 99.30%, 2
# epochs 99.19%, 4 epochs 99.37% with 53% of the CPU time. TRAIN_STEPS, when
# set, trains that many steps instead, spread over the epochs (tests use
# it for tiny runs).
EPOCHS = None
TRAINING_EXAMPLES = 180_000
MIN_EPOCHS = 3
MAX_EPOCHS = 60
BATCH_SIZE = 128  # Per GPU; one batch on CPU.
LEARNING_RATE = 1e-3
# The learning rate decays by one factor per epoch, down to this fraction
# in the last epoch: 0.75 per epoch over 8 epochs, as the classic CNN was
# tuned, gives 0.13. LEARNING_RATE_DECAY, when set, is that factor instead.
LAST_EPOCH_LEARNING_RATE = 0.13
LEARNING_RATE_DECAY = None
# The Trainer's input (modules/input_pipeline.py): a split is cached in
# memory, and shuffled through all its records, when it fits this budget
# (both splits together, training first; a split's size in memory is its
# serialized records plus ~512 bytes each, measured by reading it once:
# MNIST's 60,000 training records take 82 MiB, its eval split 14 MiB). A
# split that does not fit is streamed from its shards each epoch: they are
# reshuffled each epoch, INPUT_CYCLE_LENGTH of them read at once, and
# training records shuffled within chunks that together hold at most
# INPUT_SHUFFLE_BUFFER_BYTES (three chunks of ~15,700 MNIST records; never
# more than the budget). 1 GiB caches ~10x MNIST (600,000 records, 0.80 GiB)
# and streams 100x.
INPUT_MEMORY_BUDGET = 1 << 30  # Bytes.
INPUT_CYCLE_LENGTH = 8  # Shards; enough parallel reads for several cores.
INPUT_SHUFFLE_BUFFER_BYTES = 64 << 20
MIXED_PRECISION = True  # float16 compute on GPUs (never on CPU).
TRAIN_STEPS = None
EVAL_STEPS = None
# Training on several workers (--trainer-workers N): N processes under
# MultiWorkerMirroredStrategy, the batch size per worker. Locally the
# Trainer starts them on this machine (modules/local_workers.py); on Vertex
# AI they are the replicas of a custom job (kubeflow_runner.py).
TRAINER_WORKERS = 1
# Local workers: all of training must end within this time, or every
# worker is stopped (a hung worker never hangs the run).
TRAINER_WORKERS_TIMEOUT_SECONDS = 24 * 3600
# Any cluster: a collective op (each training step's all-reduce) that waits
# this long for the other workers fails, and its worker with it. Longer
# than any one step or the chief's export of the model.
COMMUNICATION_TIMEOUT_SECONDS = 600
# The network (modules/model.py): 'auto' picks from the data's geometry at
# training time, 'mnist-cnn' or 'small-gap-cnn' force one.
MODEL = 'auto'
# auto: the MNIST CNN for grey images up to 32x32 (its Flatten -> Dense
# head grows with the image area: 4.2M parameters at 32x32); colour or
# larger images get the small GAP CNN.
MNIST_CNN_MAX_PIXELS = 32 * 32
# The classic MNIST CNN.
CONV_FILTERS = (32, 64)
KERNEL_SIZE = 5
DENSE_UNITS = 1024
DROPOUT = 0.4
# The small GAP CNN: one conv 3x3 + batch norm + ReLU block per width, the
# first with stride 2 and max-pools between the others, then global average
# pooling: ~1.0M parameters at any image size; its last features see 77x77
# pixels. Measured on the shapes at 96x96 (BENCHMARKS.md, "Colour images",
# 60 epochs, same data, same settings): four blocks of (32, 64, 128, 256),
# each pooled, saw 46x46 pixels, pieces of most shapes, and reached 83.3%
# on the test images; this reached 99.2%.
GAP_CONV_FILTERS = (32, 64, 128, 256, 256)
GAP_DROPOUT = 0.3
# Batch norm's moving averages (what evaluation and serving normalise
# with) keep this much of their value per step. Keras's 0.99 remembers
# ~100 steps, several epochs of a few thousand images (24 steps each at
# 3,000), while the weights change under them: measured on the shapes,
# validation accuracy stayed at chance (10%) for 15 epochs while training
# accuracy rose to 70%; at 0.9 it follows the training-mode accuracy from
# the first epochs.
GAP_BATCH_NORM_MOMENTUM = 0.9
# Augmentation: random horizontal flips, shifts of up to this fraction of
# the height and width, and brightness shifts of up to this many standard
# deviations of the training pixels; in training only. None: on for colour
# images (photos and the like: a few thousand of them overfit without it),
# off for grey ones (digits and text: a flip changes what they say); True
# or False (--augment, --no-augment) force it.
AUGMENT = None
AUGMENT_SHIFT = 0.1
AUGMENT_BRIGHTNESS = 0.2

# Evaluator: a model is blessed (and pushed) only with at least this
# sparse categorical accuracy on the eval split, and no worse than the last
# blessed model. A --dataset preset brings its own.
ACCURACY_THRESHOLD = DATASETS['mnist']['accuracy_threshold']
# The model it compares with: 'last_blessed' (TFX's Resolver over ML
# Metadata; local runs and Vertex AI) or 'served' (the newest version in the
# serving directory; kubeflow_runner.py --target kubeflow). See
# pipeline.py's _baseline.
BASELINE = 'last_blessed'


# Kubeflow (kubeflow/kubeflow_runner.py). KFP pipeline names allow only
# [a-z0-9-], so the DAG is compiled under this name.
KUBEFLOW_PIPELINE_NAME = PIPELINE_NAME.replace('_', '-')
# URI schemes the containers can read and write (TensorFlow's gfile and Beam):
# Google Cloud Storage, and S3 or MinIO in an image built with WITH_S3=1.
OBJECT_STORE_SCHEMES = ('gs://', 's3://')
# The region S3 clients sign requests for when --s3-endpoint is given (MinIO
# and other S3-compatible servers accept any).
S3_REGION = 'us-east-1'
# The Kubernetes secret (and its keys) that gives the tasks of the `kubeflow`
# target their S3 credentials: the one Kubeflow Pipelines keeps for its
# MinIO, also in every profile namespace of a multi-user install.
S3_CREDENTIALS_SECRET = 'mlpipeline-minio-artifact'
S3_CREDENTIALS_KEYS = ('accesskey', 'secretkey')
# Where kubeflow/Dockerfile puts the project inside the image (its WORKDIR).
IMAGE_PROJECT_DIR = '/pipeline'
# kubeflow_runner.py puts this first in every Beam component's args, as
# local_runner.py puts LOCAL_BEAM_PIPELINE_ARGS: a remote runner (Dataflow)
# gets the project's code from the image's setup.py. Without a dependency
# flag, TFX builds an sdist of TFX itself (~52 MB in a temporary directory
# it never removes, ~2.5 s) in every Beam component's executor, of no use:
# it holds TFX, not the project.
IMAGE_BEAM_PIPELINE_ARGS = ('--setup_file=' + IMAGE_PROJECT_DIR + '/setup.py',)
# Machine of each Trainer replica on Vertex AI with --trainer-workers N.
VERTEX_TRAINER_MACHINE_TYPE = 'n1-standard-8'
# Accelerator requested by `--gpu N`: the Kubernetes resource name on
# Kubeflow; Vertex AI wants a machine accelerator type (NVIDIA_TESLA_T4...).
GPU_TYPE = 'nvidia.com/gpu'
# The compiled DAG's runtime parameter: where ExampleGen reads raw data, so a
# scheduled run can point at a new drop without recompiling.
DATA_ROOT_PARAMETER = 'data_root'

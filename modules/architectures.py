"""The networks' names, free of TensorFlow so that `--help` stays fast.

modules/model.py builds the scratch networks, modules/backbones.py the
pretrained backbones (docs/training.md).
"""

AUTO = 'auto'
MNIST_CNN = 'mnist-cnn'
SMALL_BN_CNN = 'small-bn-cnn'
SMALL_GAP_CNN = 'small-gap-cnn'
ARCHITECTURES = (SMALL_BN_CNN, MNIST_CNN, SMALL_GAP_CNN)

# Keras Applications (`--backbone`), by flag value: each one's input size
# (height, width) by default, the size its ImageNet weights were trained at.
BACKBONE_SIZES = {
    'mobilenet-v3-small': (224, 224),
    'mobilenet-v3-large': (224, 224),
    'mobilenet-v2': (224, 224),
    'efficientnet-b0': (224, 224),
    'resnet50': (224, 224),
}
BACKBONES = tuple(BACKBONE_SIZES)
# What `auto` starts colour photos from, and what --weights alone loads.
DEFAULT_BACKBONE = 'mobilenet-v3-small'
# --weights: Keras' published ImageNet weights, or none (from scratch); any
# other value is a weights file.
IMAGENET = 'imagenet'
NO_WEIGHTS = 'none'
# Keras Applications refuse smaller inputs.
BACKBONE_MIN_SIDE = 32

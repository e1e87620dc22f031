"""The networks' names, free of TensorFlow: runners/flags.py offers them as
choices, and importing Keras there would cost every `--help` seconds.
modules/model.py builds them."""

AUTO = 'auto'
MNIST_CNN = 'mnist-cnn'
SMALL_BN_CNN = 'small-bn-cnn'
SMALL_GAP_CNN = 'small-gap-cnn'
ARCHITECTURES = (SMALL_BN_CNN, MNIST_CNN, SMALL_GAP_CNN)

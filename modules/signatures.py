"""The served model's interface by name: its signatures and their outputs
(modules/trainer.py exports them). Light to import, for clients such as
the predict tool."""

SERVING_SIGNATURE = 'serving_default'
IMAGES_SIGNATURE = 'serve_images'
IMAGE_BYTES_SIGNATURE = 'serve_image_bytes'
PROBABILITIES = 'probabilities'
CLASSES = 'classes'
CLASS_NAMES = 'class_names'
# The serving model's assets.extra: class names and how it was trained.
EXTRA_DIR = 'assets.extra'

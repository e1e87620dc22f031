"""Image files of any size and mode to the trained geometry, in TensorFlow.

`serve_image_bytes` converts the files it is sent as ImageExampleGen converts
image folders (records/image_conversion.py). How: docs/serving.md.
"""

import tensorflow as tf

from modules import image_orientation
from modules import signatures
from records import features
from records import image_conversion

FORMATS = tuple(signatures.IMAGE_FILE_MAGIC.values())
_JPEG, _PNG = (next(magic for magic, name in
                    signatures.IMAGE_FILE_MAGIC.items() if name == format_)
               for format_ in ('JPEG', 'PNG'))
# Pillow's RGB to L: (R*19595 + G*38470 + B*7471 + 0x8000) >> 16.
_LUMA = (19595, 38470, 7471)
# ImageExampleGen's background for transparent pixels: one level, white.
_BACKGROUND = float(image_conversion.TRANSPARENT_BACKGROUND[0])


def check_formats(files: tf.Tensor) -> tf.Operation:
  """Returns an op that fails unless every file is a PNG, JPEG, GIF or BMP file.

  Its message names the first offending position in the batch. WebP and
  TIFF files, which image folders may hold, are refused too, since
  TensorFlow does not decode them. The predict command converts them.
  """
  known = tf.zeros_like(files, tf.bool)
  for magic in signatures.IMAGE_FILE_MAGIC:
    known |= tf.equal(tf.strings.substr(files, 0, len(magic)), magic)
  first_bad = tf.argmax(tf.cast(tf.logical_not(known), tf.int32),
                        output_type=tf.int32)
  return tf.debugging.Assert(
      tf.reduce_all(known),
      ['image_bytes: the file at batch position', first_bad,
       f'is not a {", ".join(FORMATS)} file (convert WebP and TIFF files '
       'to PNG first, as image-pipeline-predict does)'])


def _to_rgb(image: tf.Tensor) -> tf.Tensor:
  """uint8 [H, W, 1..4] as decoded to float [H, W, 3], alpha composited."""
  pixels = tf.cast(image, tf.float32)
  channels = tf.shape(image)[-1]

  def composite(colour, alpha):
    alpha = alpha / 255.0
    return colour * alpha + _BACKGROUND * (1.0 - alpha)

  def grey():
    return tf.tile(pixels[..., :1], [1, 1, 3])

  def grey_alpha():
    return tf.tile(composite(pixels[..., :1], pixels[..., 1:2]), [1, 1, 3])

  def rgb():
    return pixels[..., :3]

  def rgba():
    return composite(pixels[..., :3], pixels[..., 3:4])

  return tf.round(tf.switch_case(channels - 1, [grey, grey_alpha, rgb, rgba]))


def _to_channels(rgb: tf.Tensor, channels: int) -> tf.Tensor:
  if channels == 3:
    return rgb
  weighted = tf.cast(rgb, tf.int32) * tf.constant(_LUMA, tf.int32)
  return tf.cast(tf.bitwise.right_shift(
      tf.reduce_sum(weighted, axis=-1, keepdims=True) + 0x8000, 16),
                 tf.float32)


def _resize(image: tf.Tensor, geometry: features.ImageGeometry) -> tf.Tensor:
  size = tf.shape(image)[:2]
  same = tf.reduce_all(tf.equal(size, [geometry.height, geometry.width]))
  return tf.cond(
      same, lambda: image,
      lambda: tf.image.resize(image, [geometry.height, geometry.width],
                              'bilinear', antialias=True))


def decode_file(data: tf.Tensor, geometry: features.ImageGeometry) -> tf.Tensor:
  """Decodes one image file (a scalar string) to uint8 pixels of `geometry`."""
  # JPEG: the accurate integer IDCT, as Pillow's libjpeg uses; TensorFlow's
  # default (the fast one) shifts many pixels by a level or two.
  jpeg = tf.equal(tf.strings.substr(data, 0, len(_JPEG)), _JPEG)
  image = tf.cond(
      jpeg, lambda: tf.io.decode_jpeg(data, dct_method='INTEGER_ACCURATE'),
      lambda: tf.io.decode_image(data, expand_animations=False,
                                 dtype=tf.uint8))
  # The two formats' metadata, then one reading of it.
  metadata = tf.case(
      [(jpeg, lambda: image_orientation.jpeg_metadata(data)),
       (tf.equal(tf.strings.substr(data, 0, len(_PNG)), _PNG),
        lambda: image_orientation.png_metadata(data))],
      default=image_orientation.Metadata.none)
  image = image_orientation.transpose(
      image, image_orientation.orientation_of(metadata))
  image = _resize(_to_channels(_to_rgb(image), geometry.channels), geometry)
  pixels = tf.cast(tf.clip_by_value(tf.round(image), 0, 255), tf.uint8)
  return tf.ensure_shape(pixels, geometry.shape)


def decode_files(files: tf.Tensor,
                 geometry: features.ImageGeometry) -> tf.Tensor:
  """Decodes image files, string [N], to uint8 [N, H, W, C] of `geometry`.

  One file that is not an image fails the whole batch, since a serving graph
  answers a request or rejects it.
  """
  with tf.control_dependencies([check_formats(files)]):
    files = tf.identity(files)
  return tf.map_fn(lambda data: decode_file(data, geometry), files,
                   fn_output_signature=tf.TensorSpec(geometry.shape, tf.uint8),
                   parallel_iterations=16)

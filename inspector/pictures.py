"""PNG pictures drawn with Pillow: sample grids and confusion matrices.

Pillow (already a dependency, for image folders) is enough for a grid of
small images and a table of coloured cells; no plotting library needed.
"""

import io
import math
import os
from typing import Any, Dict, List, Sequence, Tuple

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from inspector.errors import InspectError

_FONT_SIZE = 14
_PAD = 8
_BACKGROUND = (255, 255, 255)
_TEXT = (20, 20, 20)
_GRID = (200, 200, 200)
_HIGH = np.array((31, 90, 170))  # Colour of a full row; white is empty.
_CELL_MIN = 56  # Pixels: small images are scaled up by whole factors to this.


def _font(size: int = _FONT_SIZE) -> ImageFont.ImageFont:
  return ImageFont.load_default(size=size)


def _text_size(text: str, font) -> tuple:
  left, top, right, bottom = font.getbbox(text)
  return right - left, bottom - top


def _save(image: Image.Image, path: str) -> None:
  directory = os.path.dirname(os.path.abspath(path))
  if not os.path.isdir(directory):
    raise InspectError(f'{path}: directory {directory} does not exist')
  image.save(path, format='PNG')


def png_bytes(image: Image.Image) -> bytes:
  """The picture as PNG file contents (for pages that inline it)."""
  buffer = io.BytesIO()
  image.save(buffer, format='PNG')
  return buffer.getvalue()


def _as_rgb(pixels: np.ndarray, scale: int) -> Image.Image:
  image = Image.fromarray(pixels[..., 0] if pixels.shape[-1] == 1 else pixels,
                          'L' if pixels.shape[-1] == 1 else 'RGB')
  image = image.convert('RGB')
  return image.resize((image.width * scale, image.height * scale),
                      Image.NEAREST)


def samples_grid(images: Dict[int, List[np.ndarray]], names: Sequence[str],
                 title: str, path: str) -> Dict[str, Any]:
  """Draws draw_samples_grid to the PNG file `path`.

  Returns the picture's size and the grid's geometry.
  """
  canvas, geometry = draw_samples_grid(images, names, title, what=path)
  _save(canvas, path)
  return {'width': canvas.width, 'height': canvas.height, 'grid': geometry}


def draw_samples_grid(images: Dict[int, List[np.ndarray]],
                      names: Sequence[str], title: str,
                      what: str = 'the sample grid'
                      ) -> Tuple[Image.Image, Dict[str, int]]:
  """One row per class: 'label: name', then its images.

  Returns the picture and the grid's geometry; `what` names the picture in
  the error when there is nothing to draw.
  """
  font = _font()
  shapes = [i.shape for row in images.values() for i in row]
  if not shapes:
    raise InspectError(f'no images to draw for {what}')
  height = max(s[0] for s in shapes)
  width = max(s[1] for s in shapes)
  scale = max(1, math.ceil(_CELL_MIN / max(height, width)))
  cell_w, cell_h = width * scale, height * scale
  labels = sorted(images)
  captions = [f'{label}: {names[label]}' if label < len(names)
              else f'{label}: (no name)' for label in labels]
  caption_w = max(_text_size(c, font)[0] for c in captions) + 2 * _PAD
  columns = max(1, max(len(images[label]) for label in labels))
  title_h = _text_size(title, font)[1] + 2 * _PAD
  canvas = Image.new(
      'RGB', (caption_w + columns * (cell_w + _PAD) + _PAD,
              title_h + len(labels) * (cell_h + _PAD) + _PAD), _BACKGROUND)
  draw = ImageDraw.Draw(canvas)
  draw.text((_PAD, _PAD), title, fill=_TEXT, font=font)
  for row, (label, caption) in enumerate(zip(labels, captions)):
    top = title_h + row * (cell_h + _PAD)
    draw.text((_PAD, top + cell_h // 2), caption, fill=_TEXT, font=font,
              anchor='lm')
    if not images[label]:
      draw.text((caption_w, top + cell_h // 2), '(none in this split)',
                fill=_GRID, font=font, anchor='lm')
    for column, pixels in enumerate(images[label]):
      canvas.paste(_as_rgb(pixels, scale),
                   (caption_w + column * (cell_w + _PAD), top))
  # Where image (row r, column c) is: left + c * step_x, top + r * step_y,
  # scaled `scale` times.
  return canvas, {'left': caption_w, 'top': title_h, 'step_x': cell_w + _PAD,
                  'step_y': cell_h + _PAD, 'scale': scale}


def _rotated_text(text: str, font) -> Image.Image:
  w, h = _text_size(text, font)
  label = Image.new('RGB', (w + 4, h + 6), _BACKGROUND)
  ImageDraw.Draw(label).text((2, 1), text, fill=_TEXT, font=font, anchor='lt')
  return label.rotate(90, expand=True)


def confusion_matrix(matrix: Sequence[Sequence[int]], names: Sequence[str],
                     title: str, path: str) -> Dict[str, int]:
  """Draws draw_confusion_matrix to the PNG file `path`; returns its size."""
  canvas = draw_confusion_matrix(matrix, names, title)
  _save(canvas, path)
  return {'width': canvas.width, 'height': canvas.height}


def draw_confusion_matrix(matrix: Sequence[Sequence[int]],
                          names: Sequence[str], title: str) -> Image.Image:
  """Counts in cells coloured by their share of the true class's row."""
  font, small = _font(), _font(_FONT_SIZE - 2)
  counts = np.asarray(matrix, np.int64)
  n = len(names)
  cell = max(44, _text_size(f'{counts.max():,}', small)[0] + 12)
  row_label_w = max(_text_size(name, font)[0] for name in names) + 2 * _PAD
  column_labels = [_rotated_text(name, font) for name in names]
  column_label_h = max(label.height for label in column_labels) + _PAD
  axis_h = _text_size('Ag', font)[1] + 2 * _PAD
  title_h = _text_size(title, font)[1] + 2 * _PAD
  left = axis_h + row_label_w
  top = title_h + axis_h + column_label_h
  canvas = Image.new('RGB', (max(left + n * cell + _PAD,
                                 _text_size(title, font)[0] + 2 * _PAD),
                             top + n * cell + _PAD), _BACKGROUND)
  draw = ImageDraw.Draw(canvas)
  draw.text((_PAD, _PAD), title, fill=_TEXT, font=font)
  draw.text((left + n * cell // 2, title_h + axis_h // 2), 'predicted class',
            fill=_TEXT, font=font, anchor='mm')
  axis = _rotated_text('true class', font)
  canvas.paste(axis, (_PAD, top + n * cell // 2 - axis.height // 2))
  rows = counts.sum(axis=1, keepdims=True)
  shares = np.divide(counts, rows, out=np.zeros(counts.shape), where=rows > 0)
  for i, name in enumerate(names):
    draw.text((left - _PAD, top + i * cell + cell // 2), name, fill=_TEXT,
              font=font, anchor='rm')
    label = column_labels[i]
    canvas.paste(label, (left + i * cell + (cell - label.width) // 2,
                         top - label.height - _PAD // 2))
    for j in range(n):
      share = shares[i, j]
      colour = tuple(int(v) for v in (1 - share) * 255 + share * _HIGH)
      box = (left + j * cell, top + i * cell,
             left + (j + 1) * cell, top + (i + 1) * cell)
      draw.rectangle(box, fill=colour, outline=_GRID)
      draw.text(((box[0] + box[2]) // 2, (box[1] + box[3]) // 2),
                f'{counts[i, j]:,}', font=small, anchor='mm',
                fill=(255, 255, 255) if share > 0.5 else _TEXT)
  return canvas

"""The fixed camera of the ``clevr`` sampler and the pixel -> location-bin rule.

CLEVR (Johnson et al. 2017) renders a 480x320 image of objects standing on a
ground plane through Blender's default camera.  We use a fixed pinhole model of
that camera (CLEVR itself jitters the camera a little per image; we do not):

* camera centre at ``CAMERA_LOCATION`` = (7.358891, -6.925791, 4.958309) (the
  Blender default camera position that CLEVR's base scene uses),
* looking exactly at the world origin, world ``+z`` up, no roll,
* focal length 35 mm on a 32 mm wide sensor fitted to the image width, i.e. a
  focal length of ``35 / 32 * 480 = 525`` pixels, principal point in the image
  centre, square pixels.

Pixel coordinates follow CLEVR's ``pixel_coords``: ``px`` grows to the right
from the left edge, ``py`` grows *downwards* from the top edge, and ``depth`` is
the distance along the viewing axis.

Binning (same for sampled scenes and for CLEVR json): with ``B`` bins,
``x bin = floor(px * B / 480) + 1`` and ``y bin = floor(py * B / 320) + 1``,
clipped to ``1..B``.  So y bin 1 is the top row of the image (far from the
camera) and y bin 8 the bottom row (near the camera).
"""
from __future__ import annotations

import numpy as np

__all__ = [
    "CAMERA_LOCATION",
    "FOCAL_LENGTH_MM",
    "SENSOR_WIDTH_MM",
    "IMAGE_WIDTH",
    "IMAGE_HEIGHT",
    "camera_axes",
    "project_points",
    "pixels_to_bins",
]

#: Camera centre in world coordinates (Blender default camera, as in CLEVR).
CAMERA_LOCATION = (7.358891487121582, -6.925790786743164, 4.958309173583984)
#: Blender's default lens and sensor width (sensor fitted to the image width).
FOCAL_LENGTH_MM = 35.0
SENSOR_WIDTH_MM = 32.0
#: CLEVR's image size in pixels.
IMAGE_WIDTH = 480
IMAGE_HEIGHT = 320


def camera_axes(location=CAMERA_LOCATION, target=(0.0, 0.0, 0.0)):
    """Orthonormal camera frame looking from ``location`` at ``target``.

    Returns ``(right, up, forward)``, three float64 arrays of shape ``(3,)``
    (image right, image up, viewing direction), with world ``+z`` as up.
    """
    loc = np.asarray(location, dtype=np.float64)
    forward = np.asarray(target, dtype=np.float64) - loc
    forward /= np.linalg.norm(forward)
    right = np.cross(forward, np.array([0.0, 0.0, 1.0]))
    right /= np.linalg.norm(right)
    up = np.cross(right, forward)
    return right, up, forward


def project_points(xyz, *, location=CAMERA_LOCATION, width=IMAGE_WIDTH,
                   height=IMAGE_HEIGHT, focal_mm=FOCAL_LENGTH_MM,
                   sensor_width_mm=SENSOR_WIDTH_MM):
    """Project world points to CLEVR-style pixel coordinates.

    ``xyz``: float array of shape ``(..., 3)``.  Returns ``(px, py, depth)``,
    three float64 arrays of shape ``(...)``; ``py`` is measured from the top of
    the image.  Points behind the camera get ``depth <= 0`` (and meaningless
    pixel coordinates).
    """
    xyz = np.asarray(xyz, dtype=np.float64)
    right, up, forward = camera_axes(location)
    d = xyz - np.asarray(location, dtype=np.float64)
    xc = d @ right
    yc = d @ up
    depth = d @ forward
    f_px = focal_mm / sensor_width_mm * width
    with np.errstate(divide="ignore", invalid="ignore"):
        px = width / 2.0 + f_px * xc / depth
        py = height / 2.0 - f_px * yc / depth
    return px, py, depth


def pixels_to_bins(px, py, n_x_bins: int = 8, n_y_bins: int = 8, *,
                   width=IMAGE_WIDTH, height=IMAGE_HEIGHT, first: int = 1):
    """Location bins of pixel coordinates.

    ``px``, ``py``: float or int arrays of the same shape (``py`` from the top).
    Returns ``(x_bin, y_bin)``, ``int64`` arrays of that shape with values in
    ``first..first+n_x_bins-1`` and ``first..first+n_y_bins-1``:
    ``floor(px * n_x_bins / width) + first`` clipped, likewise for y.  ``first=1``
    (default) numbers the bins like the grammar's location constants 1..8; CURI's
    release numbered them from 0 (``first=0``).
    Non-finite coordinates raise ``ValueError``.
    """
    px = np.asarray(px, dtype=np.float64)
    py = np.asarray(py, dtype=np.float64)
    if not (np.isfinite(px).all() and np.isfinite(py).all()):
        raise ValueError("pixel coordinates must be finite")
    bx = np.clip(np.floor(px * n_x_bins / width), 0, n_x_bins - 1).astype(np.int64) + first
    by = np.clip(np.floor(py * n_y_bins / height), 0, n_y_bins - 1).astype(np.int64) + first
    return bx, by
